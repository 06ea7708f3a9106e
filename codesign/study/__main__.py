"""``python -m codesign.study --generate``: (re)write the study's problem files (problems/paper/)."""
import sys

from .run import main

sys.exit(main())
