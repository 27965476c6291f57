"""Argument types shared by torch_mlu's command-line modules (compare_precision, compile_run)."""

import argparse


def shape_type(option):
    """An argparse type for `option`: comma-separated positive sizes ("2,3,64,64") -> [2, 3, 64, 64];
    a bad value is an error naming the option and the value."""

    def parse(text):
        try:
            shape = [int(v) for v in text.split(",")]
        except ValueError:
            raise argparse.ArgumentTypeError(f"{option} wants comma-separated sizes, got {text!r}") from None
        if not shape or any(v <= 0 for v in shape):
            raise argparse.ArgumentTypeError(f"{option} sizes must be positive, got {text!r}")
        return shape

    return parse


def positive_int_type(option):
    """An argparse type for `option`: an integer >= 1; a bad value is an error naming the option."""

    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{option} wants an integer, got {text!r}") from None
        if value < 1:
            raise argparse.ArgumentTypeError(f"{option} must be >= 1, got {value}")
        return value

    return parse
