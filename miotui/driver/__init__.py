"""MIOpenDriver: its grammar, commands <-> problems, its output, and running it.

The public names below are what the rest of miotui uses; the modules behind them are
``commands`` (argv <-> problem, one module per family), ``flags`` (reading a command's flags as
the driver does), ``spec`` and ``tables`` (the driver's flags as data), ``shell`` (commands in
pasted shell text) and ``output`` (the driver's stdout).
"""

from miotui.driver.commands import (
                                    KNOWN_BASES,
                                    DriverCommandError,
                                    ParsedCommand,
                                    parse_driver_args,
                                    parse_driver_command,
                                    split_command_text,
                                    to_driver_argv,
                                    to_driver_command,
)

__all__ = ["KNOWN_BASES", "DriverCommandError", "ParsedCommand", "parse_driver_args", "parse_driver_command",
           "split_command_text", "to_driver_argv", "to_driver_command"]
