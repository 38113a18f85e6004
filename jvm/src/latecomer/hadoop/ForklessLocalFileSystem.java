package latecomer.hadoop;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermissions;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's local file system ({@code file:}), checksums included, except that
 * a file's mode is set inside the JVM.
 *
 * <p>Without Hadoop's native library, which pyspark does not ship, the raw
 * local file system sets the mode of every file and folder it creates by
 * starting a {@code chmod} process. A build writes thousands of files (data,
 * Iceberg metadata, their checksums, spilled rows), so it starts thousands of
 * processes. Here the same mode is set through {@code java.nio}. A mode with
 * the sticky bit, which {@code java.nio} cannot set, still goes to
 * {@code chmod}.
 *
 * <p>Selected with {@code fs.file.impl}; python_jobs/core/spark_config.py
 * does that for local Spark masters when {@code make install} has built the
 * jar.
 */
public class ForklessLocalFileSystem extends LocalFileSystem {

  public ForklessLocalFileSystem() {
    super(new Raw());
  }

  /** The raw (checksum-free) file system below the checksums. */
  public static class Raw extends RawLocalFileSystem {

    /** The raw file system names no scheme of its own; Spark and Iceberg ask for it. */
    @Override
    public String getScheme() {
      return "file";
    }

    @Override
    public void setPermission(Path path, FsPermission permission) throws IOException {
      if (permission.getStickyBit()) {
        super.setPermission(path, permission);
        return;
      }
      String mode =
          permission.getUserAction().SYMBOL
              + permission.getGroupAction().SYMBOL
              + permission.getOtherAction().SYMBOL;
      Files.setPosixFilePermissions(pathToFile(path).toPath(), PosixFilePermissions.fromString(mode));
    }
  }
}
