"""``python -m mcu_exp`` = the ``mcu-exp`` command."""

from mcu_exp.app import main

main()
