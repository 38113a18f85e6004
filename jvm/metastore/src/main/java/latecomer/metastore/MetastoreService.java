package latecomer.metastore;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hive.metastore.HiveMetaStore;
import org.apache.hadoop.hive.metastore.IHMSHandler;
import org.apache.hadoop.hive.metastore.RetryingHMSHandler;
import org.apache.hadoop.hive.metastore.TServerSocketKeepAlive;
import org.apache.hadoop.hive.metastore.TUGIBasedProcessor;
import org.apache.hadoop.hive.metastore.ThreadPool;
import org.apache.hadoop.hive.metastore.conf.MetastoreConf;
import org.apache.hadoop.hive.metastore.conf.MetastoreConf.ConfVars;
import org.apache.hadoop.hive.metastore.security.TUGIContainingTransport;
import org.apache.hadoop.hive.metastore.txn.AcidHouseKeeperService;
import org.apache.thrift.protocol.TBinaryProtocol;
import org.apache.thrift.protocol.TProtocol;
import org.apache.thrift.server.ServerContext;
import org.apache.thrift.server.TServer;
import org.apache.thrift.server.TServerEventHandler;
import org.apache.thrift.server.TThreadPoolServer;
import org.apache.thrift.transport.TServerSocket;
import org.apache.thrift.transport.TTransport;

/**
 * Hive 3.1's metastore service listening on one address (127.0.0.1 for latecomer), with its
 * lock reaper running.
 *
 * <p>{@code HiveMetaStore.main} has no setting for the address: it listens on every interface
 * ({@code SecurityUtils.getServerSocket(null, port)}; Hive 4 adds {@code
 * metastore.thrift.bind.host}), and anyone who reaches the port may change the catalog, or have
 * the service create and delete folders. This is {@code HiveMetaStore.startMetaStore}'s
 * unsecured path (no SASL, no SSL, binary protocol, unframed: what Spark's client speaks by
 * default) with Hive's own handler, processor and transport, on the address given.
 *
 * <p>It also runs Hive's {@link AcidHouseKeeperService}, which releases the locks of a client
 * that stopped heartbeating (a process killed while it held an Iceberg commit lock). Hive 3.1
 * starts it only beside the compactor, whose classes live in hive-exec; without it such a lock
 * stays for good and every later commit to the table waits for it, then fails.
 *
 * <p>Usage: {@code MetastoreService <host> <port>}; the configuration comes from
 * metastore-site.xml on the class path, as for {@code HiveMetaStore}.
 */
public final class MetastoreService {

  private MetastoreService() {}

  public static void main(String[] args) throws Throwable {
    if (args.length != 2) {
      System.err.println("usage: MetastoreService <host> <port>");
      System.exit(2);
    }
    InetSocketAddress address = new InetSocketAddress(args[0], Integer.parseInt(args[1]));
    Configuration conf = MetastoreConf.newMetastoreConf();
    for (ConfVars unsupported :
        new ConfVars[] {
          ConfVars.USE_THRIFT_SASL,
          ConfVars.USE_SSL,
          ConfVars.USE_THRIFT_FRAMED_TRANSPORT,
          ConfVars.USE_THRIFT_COMPACT_PROTOCOL
        }) {
      if (MetastoreConf.getBoolVar(conf, unsupported)) {
        throw new IllegalArgumentException(
            unsupported.getVarname() + " is set: run org.apache.hadoop.hive.metastore.HiveMetaStore");
      }
    }
    // What HiveMetaStore.startMetaStore records first: the handler then behaves as a service's.
    Field remote = HiveMetaStore.class.getDeclaredField("isMetaStoreRemote");
    remote.setAccessible(true);
    remote.setBoolean(null, true);
    // Releases a connection's thread-local store when the client goes, as HiveMetaStore does.
    Method cleanup = HiveMetaStore.class.getDeclaredMethod("cleanupRawStore");
    cleanup.setAccessible(true);

    IHMSHandler handler =
        RetryingHMSHandler.getProxy(
            conf, new HiveMetaStore.HMSHandler("new db based metaserver", conf, false), false);
    long maxMessageSize = MetastoreConf.getLongVar(conf, ConfVars.SERVER_MAX_MESSAGE_SIZE);
    TServerSocket socket = new TServerSocket(address);
    if (MetastoreConf.getBoolVar(conf, ConfVars.TCP_KEEP_ALIVE)) {
      socket = new TServerSocketKeepAlive(socket);
    }
    TThreadPoolServer.Args serverArgs =
        new TThreadPoolServer.Args(socket)
            .processor(new TUGIBasedProcessor<>(handler))
            .transportFactory(new TUGIContainingTransport.Factory())
            .protocolFactory(new TBinaryProtocol.Factory())
            .inputProtocolFactory(
                new TBinaryProtocol.Factory(true, true, maxMessageSize, maxMessageSize))
            .minWorkerThreads(MetastoreConf.getIntVar(conf, ConfVars.SERVER_MIN_THREADS))
            .maxWorkerThreads(MetastoreConf.getIntVar(conf, ConfVars.SERVER_MAX_THREADS));
    TServer server = new TThreadPoolServer(serverArgs);
    server.setServerEventHandler(
        new TServerEventHandler() {
          @Override
          public void preServe() {}

          @Override
          public ServerContext createContext(TProtocol input, TProtocol output) {
            return null;
          }

          @Override
          public void deleteContext(ServerContext context, TProtocol input, TProtocol output) {
            try {
              cleanup.invoke(null);
            } catch (ReflectiveOperationException e) {
              throw new IllegalStateException(e);
            }
          }

          @Override
          public void processContext(ServerContext context, TTransport in, TTransport out) {}
        });

    AcidHouseKeeperService reaper = new AcidHouseKeeperService();
    reaper.setConf(conf);
    long every = reaper.runFrequency(TimeUnit.MILLISECONDS);
    ThreadPool.initialize(conf);
    ThreadPool.getPool().scheduleAtFixedRate(reaper, every, every, TimeUnit.MILLISECONDS);
    Runtime.getRuntime().addShutdownHook(new Thread(ThreadPool::shutdown));

    System.err.println("latecomer metastore service listening on " + address);
    server.serve();
  }
}
