"""The ``knetsim`` command line. Each module here that defines ``COMMANDS`` adds its commands."""
