from lits.cli.main import main

raise SystemExit(main())
