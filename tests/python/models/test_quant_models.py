"""int8 models on the device (torch_mlu.quantization): torchvision resnet18 (the whole model
through torch.ao's FX graph mode, conv/linear lowered to the int8 TFU kernels) and a Hugging Face
BERT (layer by layer: torch.fx cannot trace it whole), random weights, small shapes, on tiny.
Each against the CPU's reference quantized model (torch.ao's reference representation: same
scales, fp32 math between quantize/dequantize) and against the fp32 model. The CPU fallback is
off (conftest): every op of the quantized models runs on the device."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest  # noqa: E402
import torch  # noqa: E402
import torch_mlu  # noqa: E402
import torch_mlu.quantization as mq  # noqa: E402
import torchvision  # noqa: E402
import transformers  # noqa: E402

pytestmark = pytest.mark.usefixtures("big_dram")
DEV = torch.device("mlu", 0)


def _rel(a, b):
    return ((a - b).norm() / b.norm()).item()


def test_resnet18_int8_matches_cpu_reference():
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10).eval()
    calib = [torch.randn(2, 3, 32, 32) for _ in range(2)]
    x = torch.randn(2, 3, 32, 32)
    ref = mq.prepare_int8(model, (x,), calib, per_channel=True)
    q = mq.lower_to_mlu(ref, DEV)
    assert q.int8_layers == 21  # 20 convolutions (batch norms folded) and fc
    with torch.no_grad():
        y_dev = q(x.to(DEV)).cpu()
        y_ref, y32 = ref(x), model(x)
    # The device's exact int32 sums vs the reference's fp32 convolutions: an int8 value one step
    # apart now and then, carried through 21 layers.
    assert _rel(y_dev, y_ref) < 0.05, _rel(y_dev, y_ref)
    assert _rel(y_dev, y32) < 0.25, _rel(y_dev, y32)


def test_bert_int8_layer_by_layer_matches_cpu_reference():
    torch.manual_seed(0)
    cfg = transformers.BertConfig(vocab_size=128, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                  intermediate_size=128, max_position_embeddings=32, num_labels=4,
                                  hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = transformers.BertForSequenceClassification(cfg).eval()
    ids = torch.randint(0, 128, (2, 16))
    calib = [torch.randint(0, 128, (2, 16)) for _ in range(2)]
    ref = mq.prepare_int8(model, (ids,), calib)  # auto: layer by layer
    q = mq.lower_to_mlu(ref, DEV)
    assert q.int8_layers == 14  # 6 linears per layer, pooler, classifier
    with torch.no_grad():
        y_dev = q(ids.to(DEV)).logits.cpu()
        y_ref, y32 = ref(ids).logits, model(ids).logits
    assert _rel(y_dev, y_ref) < 0.05, _rel(y_dev, y_ref)
    assert _rel(y_dev, y32) < 0.25, _rel(y_dev, y32)
