"""pb_utils.TritonError (an error value a model puts in a response, with a
code the client sees) and pb_utils.TritonModelException (what API misuse
raises, and what models raise themselves)."""


class TritonModelException(Exception):
    """str(e) is exactly the message."""

    def __init__(self, message):
        super().__init__(message)
        self._message = message

    def message(self):
        return self._message

    def __str__(self):
        return str(self._message)


class _ErrorCode(int):
    def __new__(cls, value, name):
        obj = int.__new__(cls, value)
        obj._name = name
        return obj

    @property
    def name(self):
        return self._name

    def __repr__(self):
        return "TritonError." + self._name


_CODES = ["UNKNOWN", "INTERNAL", "NOT_FOUND", "INVALID_ARG", "UNAVAILABLE", "UNSUPPORTED",
          "ALREADY_EXISTS", "CANCELLED"]


class TritonError:
    UNKNOWN = _ErrorCode(0, "UNKNOWN")
    INTERNAL = _ErrorCode(1, "INTERNAL")
    NOT_FOUND = _ErrorCode(2, "NOT_FOUND")
    INVALID_ARG = _ErrorCode(3, "INVALID_ARG")
    UNAVAILABLE = _ErrorCode(4, "UNAVAILABLE")
    UNSUPPORTED = _ErrorCode(5, "UNSUPPORTED")
    ALREADY_EXISTS = _ErrorCode(6, "ALREADY_EXISTS")
    CANCELLED = _ErrorCode(7, "CANCELLED")

    def __init__(self, message, code=None):
        if message is None:
            raise TypeError("TritonError(): incompatible constructor arguments: message must be str, not None")
        if code is None:
            code = TritonError.INTERNAL
        if not isinstance(code, int) or not 0 <= int(code) < len(_CODES):
            raise TypeError("TritonError(): incompatible constructor arguments: code must be a TritonError code")
        self._message = str(message)
        self._code = _ErrorCode(int(code), _CODES[int(code)])

    def message(self):
        return self._message

    def code(self):
        return self._code

    def __repr__(self):
        return "TritonError(%r, %r)" % (self._message, self._code)

    def _wire(self):
        return {"code": self._code.name, "message": self._message}

    @staticmethod
    def _from_wire(err):
        code = _CODES.index(err["code"]) if err.get("code") in _CODES else 1
        return TritonError(err.get("message", ""), code)
