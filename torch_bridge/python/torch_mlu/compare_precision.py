"""``python -m torch_mlu.compare_precision MODEL``: torch_mlu.compare from the command line.

MODEL is one of
  NAME              a torchvision model builder (shufflenet_v2_x0_5, resnet18, ...), random weights
  FILE.py:FUNC      FUNC() from a Python file
  package.mod:FUNC  FUNC() from an importable module
FUNC returns an nn.Module (its input is random, --input-shape) or (module, inputs) with inputs as
torch_mlu.compare takes them (a tensor, a tuple of arguments, a dict of keyword arguments).

Prints the table (precision_report.py) and writes --json / --html when asked. Exit status: 0, or
1 with --check when a layer or parameter gradient is flagged, 2 for bad usage. Example:

  python -m torch_mlu.compare_precision shufflenet_v2_x0_5 --mode train --input-shape 2,3,64,64 \\
      --num-classes 10 --json precision.json
"""

import argparse
import importlib
import importlib.util
import pathlib
import sys

from ._cli import shape_type


def _parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m torch_mlu.compare_precision",
                                description="Layer-by-layer precision of a model on the MLU against the CPU in "
                                            "float64 (and float32 for comparison).",
                                epilog="See torch_bridge/README.md, 'Precision alignment'.")
    p.add_argument("model", help="torchvision builder name, FILE.py:FUNC or package.module:FUNC")
    p.add_argument("--input-shape", type=shape_type("--input-shape"), action="append",
                   help="shape of one random float input (repeat for several arguments; default 2,3,64,64)")
    p.add_argument("--num-classes", type=int, help="num_classes for a torchvision builder")
    p.add_argument("--mode", choices=("train", "eval"), default="eval",
                   help="module mode of all three runs (default eval; train: BatchNorm uses batch statistics)")
    p.add_argument("--dropout", choices=("error", "eval"), default="error",
                   help="eval: dropout modules off in train mode (default: error if the model draws random numbers)")
    p.add_argument("--no-backward", action="store_true", help="forward only")
    p.add_argument("--threshold", type=float, default=1e-5, help="relative error that flags a tensor (default 1e-5)")
    p.add_argument("--cpu-margin", type=float, default=10.0,
                   help="also require the device error above this many times the CPU float32 error "
                        "(0: off; default 10)")
    p.add_argument("--seed", type=int, default=0, help="seed of the weights, the inputs and each run (default 0)")
    p.add_argument("--config", help="simulated hardware preset or YAML file (default: $MLUSIM_CONFIG or mlu370-x4)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config override (repeatable)")
    p.add_argument("--rows", type=int, default=40, help="table rows per phase (0: all)")
    p.add_argument("--json", type=pathlib.Path, help="write the report as JSON")
    p.add_argument("--html", type=pathlib.Path, help="write the report as a standalone HTML page")
    p.add_argument("--check", action="store_true", help="exit with status 1 when anything is flagged")
    return p.parse_args(argv)


def _load_factory(spec):
    """The model factory of MODEL (see the module docstring)."""
    if ":" not in spec:
        import torchvision

        builder = getattr(torchvision.models, spec, None)
        if builder is None or not callable(builder) or spec.startswith("_"):
            raise ValueError(f"unknown model {spec!r}: not a torchvision.models builder; use FILE.py:FUNC or "
                             "package.module:FUNC for your own")
        return builder, True
    where, func = spec.rsplit(":", 1)
    if where.endswith(".py"):
        path = pathlib.Path(where)
        if not path.is_file():
            raise ValueError(f"no such file: {where}")
        module_spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    factory = getattr(module, func, None)
    if not callable(factory):
        raise ValueError(f"{where} has no function {func!r}")
    return factory, False


def main(argv=None):
    args = _parse_args(sys.argv[1:] if argv is None else argv)
    import torch

    import torch_mlu

    if args.config or args.set:
        torch_mlu.load_config(args.config or torch_mlu.config_name(), args.set)
    try:
        factory, is_torchvision = _load_factory(args.model)
    except (ValueError, ImportError) as e:
        print(f"compare_precision: {e}", file=sys.stderr)
        return 2
    torch.manual_seed(args.seed)
    kwargs = {"num_classes": args.num_classes} if is_torchvision and args.num_classes else {}
    made = factory(weights=None, **kwargs) if is_torchvision else factory()
    model, inputs = made if isinstance(made, tuple) and len(made) == 2 else (made, None)
    if inputs is None:
        shapes = args.input_shape or [[2, 3, 64, 64]]
        inputs = tuple(torch.randn(s) for s in shapes)
    elif args.input_shape:
        print("compare_precision: --input-shape is ignored: the factory returned the inputs", file=sys.stderr)
    try:
        report = torch_mlu.compare(model, inputs, backward=not args.no_backward, mode=args.mode, dropout=args.dropout,
                                   threshold=args.threshold, cpu_margin=args.cpu_margin, seed=args.seed)
    except (TypeError, ValueError) as e:
        print(f"compare_precision: {e}", file=sys.stderr)
        return 2
    report.settings["model"] = args.model
    print(report.table(args.rows or None))
    if args.json:
        report.dump(args.json)
        print(f"\nJSON: {args.json}")
    if args.html:
        args.html.write_text(report.to_html(standalone=True), encoding="utf-8")
        print(f"HTML: {args.html}")
    return 1 if args.check and not report.ok else 0


if __name__ == "__main__":
    sys.exit(main())
