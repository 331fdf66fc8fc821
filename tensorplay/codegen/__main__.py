import sys

from tensorplay.codegen.main import main

sys.exit(main())
