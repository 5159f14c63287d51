"""The `calculator` plugin: arithmetic evaluated by walking the `ast`, never with `eval`.

Allowed: numbers, `+ - * / // % **`, unary `+`/`-`, parentheses, the constants `pi`, `e`, `tau`,
and the functions in `FUNCTIONS`. Anything else (names, attributes, calls of other things,
strings, comprehensions…) is rejected before evaluation. Bounds keep one expression cheap:
its length, integer sizes (checked before a power is computed), and factorial's argument.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

from app.i18n import N_
from app.tools.source_state import Plugin
from app.tools.tool import Tool, ToolContext, ToolErrorCode, ToolFailure

MAX_EXPRESSION_CHARS = 500
MAX_INTEGER_BITS = 10_000
MAX_FACTORIAL = 1000

CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e, "tau": math.tau}


def _factorial(value: float) -> int:
    if not isinstance(value, int) or value < 0 or value > MAX_FACTORIAL:
        raise ValueError(f"factorial needs an integer between 0 and {MAX_FACTORIAL}")
    return math.factorial(value)


FUNCTIONS: dict[str, Callable[..., float]] = {
    "abs": abs,
    "round": round,
    "min": min,
    "max": max,
    "sqrt": math.sqrt,
    "exp": math.exp,
    "log": math.log,
    "log2": math.log2,
    "log10": math.log10,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "asin": math.asin,
    "acos": math.acos,
    "atan": math.atan,
    "atan2": math.atan2,
    "hypot": math.hypot,
    "degrees": math.degrees,
    "radians": math.radians,
    "floor": math.floor,
    "ceil": math.ceil,
    "factorial": _factorial,
}

BINARY_OPERATORS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}

UNARY_OPERATORS: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}


class CalculationError(Exception):
    """The expression is not allowed or cannot be computed; the message says why."""


def create_plugin() -> Plugin:
    return Plugin(
        name="calculator",
        title=N_("Calculator"),
        description=N_("Arithmetic and common math functions, evaluated safely."),
        tools=(
            Tool(
                "calculate",
                "Evaluate an arithmetic expression (integers are exact, other numbers are "
                "floats): numbers, + - * / // % **, parentheses, unary minus, constants pi e tau, "
                "and the functions "
                + ", ".join(FUNCTIONS)
                + ".",
                {
                    "type": "object",
                    "properties": {
                        "expression": {
                            "type": "string",
                            "minLength": 1,
                            "maxLength": MAX_EXPRESSION_CHARS,
                            "description": "e.g. '2 ** 10 + sqrt(16) / 3'",
                        }
                    },
                    "required": ["expression"],
                    "additionalProperties": False,
                },
                _calculate_tool,
                read_only=True,
            ),
        ),
    )


async def _calculate_tool(arguments: dict[str, Any], context: ToolContext) -> str:
    expression = arguments["expression"]
    try:
        result = calculate(expression)
    except CalculationError as exc:
        raise ToolFailure(ToolErrorCode.TOOL_FAILED, str(exc)) from None
    return f"{expression.strip()} = {result!r}"


def calculate(expression: str) -> int | float:
    """The value of `expression`, or `CalculationError`."""
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise CalculationError(f"the expression is longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise CalculationError(f"not an arithmetic expression: {exc}") from None
    try:
        return _evaluate(tree.body)
    except ZeroDivisionError:
        raise CalculationError("division by zero") from None
    except (OverflowError, ValueError, TypeError) as exc:
        raise CalculationError(f"cannot compute: {exc}") from None
    except RecursionError:
        raise CalculationError("the expression is nested too deeply") from None


def _evaluate(node: ast.expr) -> int | float:
    match node:
        case ast.Constant(value=bool()):
            raise CalculationError("booleans are not numbers here")
        case ast.Constant(value=int() | float() as value):
            return _checked(value)
        case ast.Name(id=name) if name in CONSTANTS:
            return CONSTANTS[name]
        case ast.UnaryOp(op=op, operand=operand) if type(op) in UNARY_OPERATORS:
            return _checked(UNARY_OPERATORS[type(op)](_evaluate(operand)))
        case ast.BinOp(left=left, op=op, right=right) if type(op) in BINARY_OPERATORS:
            a, b = _evaluate(left), _evaluate(right)
            if isinstance(op, ast.Pow):
                _check_power(a, b)
            return _checked(BINARY_OPERATORS[type(op)](a, b))
        case ast.Call(func=ast.Name(id=name), args=args, keywords=[]) if name in FUNCTIONS:
            return _checked(FUNCTIONS[name](*(_evaluate(arg) for arg in args)))
    raise CalculationError(f"not allowed in an expression: {ast.unparse(node)[:80]}")


def _check_power(base: int | float, exponent: int | float) -> None:
    """Refuse an integer power whose result would exceed the size bound, before computing it."""
    if isinstance(base, int) and isinstance(exponent, int) and abs(base) > 1 and exponent > 0:
        if (abs(base).bit_length() - 1) * exponent > MAX_INTEGER_BITS:
            raise CalculationError(f"the result would exceed {MAX_INTEGER_BITS} bits")


def _checked(value: Any) -> int | float:
    if isinstance(value, complex):
        raise CalculationError("the result is a complex number")
    if isinstance(value, int) and value.bit_length() > MAX_INTEGER_BITS:
        raise CalculationError(f"the result would exceed {MAX_INTEGER_BITS} bits")
    if not isinstance(value, int | float):
        raise CalculationError("the result is not a number")
    return value
