#!/usr/bin/env python3
"""Writes OUT_DIR/exported_mlp.pt2 (a torch.export program with a dynamic batch, what a PyTorch 2
user saves with torch.export.save) and OUT_DIR/not_a_program.pt2, for the CLI tests of
`mlusim run FILE.pt2`."""

import pathlib
import sys

import torch

out = pathlib.Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 10)).eval()
batch = torch.export.Dim("batch", min=1, max=1024)
program = torch.export.export(model, (torch.randn(4, 32),), dynamic_shapes=({0: batch},))
torch.export.save(program, out / "exported_mlp.pt2")
(out / "not_a_program.pt2").write_text("not a zip archive\n")
