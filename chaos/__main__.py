import sys

from chaos.cli import chaos_main

sys.exit(chaos_main())
