"""``python -m mcu_exp`` = the ``mcu-exp`` command."""

from mcu_exp.entry import main

main()
