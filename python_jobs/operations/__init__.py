"""Command-line tools that run the project: the Thrift server and the sample run."""
