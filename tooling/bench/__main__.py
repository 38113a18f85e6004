import sys

from tooling.bench.cli import main

sys.exit(main())
