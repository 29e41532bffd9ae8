from irlscrapy.cli import main

raise SystemExit(main())
