"""The command line: one module per ``mcu-exp`` subcommand (``cli/<command>.py``) and their table
(:mod:`mcu_exp.cli.commands`). This floor stands above everything it calls; nothing below imports it."""
