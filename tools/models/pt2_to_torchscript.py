#!/usr/bin/env python3
"""Converts a torch.export program (.pt2, what PyTorch 2 users export with torch.export.save) into
the TorchScript file and JSON sidecar that `mlusim run` executes from C++ (libtorch has no loader
for exported programs without AOTInductor). Run by the mlusim CLI with the project venv's python.

The program's module (ep.module(): plain ATen ops) is traced with the example inputs saved in the
program; sizes stay symbolic in the trace, so a batch dimension that the export marked dynamic
(torch.export.Dim) follows `mlusim run --batch`. The graph keeps the mode it was exported in (an
inference export has its batch norms in eval mode whatever --train says).

Sidecar: {"inputs": [[-1, 3, 224, 224], ...], "loss": "mse"}: a dimension 0 that is symbolic in the
program becomes -1 (the batch); integer inputs (all of them: token ids) get "vocab" = 1 + the largest
example value.

Usage: pt2_to_torchscript.py PROGRAM.pt2 OUT.pt OUT.json
"""

import json
import sys
import warnings


def main(argv):
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    src, out_pt, out_json = argv[1:]
    import torch

    try:
        ep = torch.export.load(src)
    except Exception as e:  # a file of another kind, a program from an incompatible torch
        print(f"{src}: not a torch.export program torch {torch.__version__} can load: {e}", file=sys.stderr)
        return 1
    args, kwargs = ep.example_inputs if ep.example_inputs is not None else ((), {})
    if kwargs or not args or not all(isinstance(a, torch.Tensor) for a in args):
        print(f"{src}: mlusim run needs a program whose example inputs are positional tensors "
              f"(got {len(args)} positional, {len(kwargs)} keyword)", file=sys.stderr)
        return 1
    placeholders = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    shapes = []
    for name, example in zip(ep.graph_signature.user_inputs, args):
        val = placeholders[name].meta.get("val")
        shape = list(example.shape)
        if val is not None and len(val.shape) > 0 and not isinstance(val.shape[0], int):
            shape[0] = -1  # a dynamic leading dim: the batch
        shapes.append(shape)
    sidecar = {"name": src, "inputs": shapes, "loss": "mse", "classes": 0,
               "description": f"torch.export program {src} (traced for libtorch)"}
    integral = [a for a in args if not a.is_floating_point()]
    if integral and len(integral) != len(args):
        print(f"{src}: mlusim run feeds either float inputs or token ids; this program mixes both", file=sys.stderr)
        return 1
    if integral:
        sidecar["vocab"] = int(max(int(a.max()) for a in integral)) + 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer warnings about the program's shape guards
        traced = torch.jit.trace(ep.module(), tuple(args), strict=False, check_trace=False)
    traced.save(out_pt)
    with open(out_json, "w") as f:
        json.dump(sidecar, f, indent=2)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
