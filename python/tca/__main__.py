from tca.cli import main

raise SystemExit(main())
