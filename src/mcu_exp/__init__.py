"""mcu_exp: does a language model understand code the way humans do?

Behavioural proxies (P0-P3) turn a model's behaviour on each program into a High/Low label
through a calibrated threshold; the labels are scored against human comprehension labels.
"""

__version__ = "0.1.0"
