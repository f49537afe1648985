"""pb_utils.Logger: records go to the server log with the Python caller's
file and line; before the channel exists they are written to stderr."""
import inspect
import os
import sys

from _nt_runtime import runtime


class _LogLevel:
    def __init__(self, value, name):
        self.value = value
        self.name = name

    def __repr__(self):
        return "LogLevel." + self.name


_DEFAULT = object()


class Logger:
    INFO = _LogLevel(0, "INFO")
    WARNING = _LogLevel(1, "WARNING")
    ERROR = _LogLevel(2, "ERROR")
    VERBOSE = _LogLevel(3, "VERBOSE")

    @staticmethod
    def log(message, level=_DEFAULT):
        if level is _DEFAULT:
            level = Logger.INFO
        if not isinstance(message, str):
            raise TypeError("log(): incompatible function arguments: message must be str")
        if not isinstance(level, _LogLevel):
            raise TypeError("log(): incompatible function arguments: level must be a pb_utils.Logger level")
        frame = inspect.currentframe().f_back
        while frame is not None and frame.f_code.co_filename == __file__:
            frame = frame.f_back
        file = frame.f_code.co_filename if frame else "<unknown>"
        line = frame.f_lineno if frame else 0
        _emit(level.name, file, line, message)

    @staticmethod
    def log_info(message):
        Logger.log(message, Logger.INFO)

    @staticmethod
    def log_warn(message):
        Logger.log(message, Logger.WARNING)

    @staticmethod
    def log_error(message):
        Logger.log(message, Logger.ERROR)

    @staticmethod
    def log_verbose(message):
        Logger.log(message, Logger.VERBOSE)


def _emit(level, file, line, message):
    if runtime.channel is not None:
        runtime.send({"t": "log", "level": level, "file": file, "line": line, "message": message})
    else:
        sys.stderr.write("%s %s:%d] %s\n" % (level[0], os.path.basename(file), line, message))
        sys.stderr.flush()


def internal_log(level, message):
    """The stub's own records (tagged with the stub's file)."""
    _emit(level, "pb_stub.py", 0, message)
