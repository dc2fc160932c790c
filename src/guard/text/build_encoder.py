"""Builds the text guard's encoder from all-mpnet-base-v2's weights (safetensors, fp32):

  build_encoder.py MODEL_DIR OUT_DIR     the weights as they ship (finetune.py calls write_encoder
                                         with its tuned weights instead; that is what setup does)

OUT_DIR/encoder.onnx  the 12 transformer layers as an ONNX graph, its weight products in int8:
                      the weights scaled per output column, the activations per token (a cosine of
                      0.996 at the median against fp32, 0.989 at worst, on 200 held-out texts; the
                      runtime's dynamic quantisation, one scale for a whole batch, made a text's
                      embedding depend on the texts batched with it: a cosine of 0.974 between a
                      text read alone and in a batch, and it needed the second feed-forward product
                      left in fp32)
OUT_DIR/embeddings.npz  what runs before and around the graph, in numpy (mpnet.py): the word and
                      position embeddings, their layer norm and the relative-position bias table

The packages that carry the weights ship no graph, and no runtime here reads safetensors, so the
graph is written once at setup, node by node, from the architecture in the model's config.json
(hidden 768, 12 heads of 64, 12 layers, feed-forward 3072, layer-norm epsilon 1e-5). layers_graph
takes another width, depth and epsilon: the semantic cache's judge (MiniLM, 384 wide, 6 layers)
is written by it too, its weights named as MPNet's.
"""
import json
import struct
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

LAYERS, HEADS, HEAD_SIZE, HIDDEN, EPSILON = 12, 12, 64, 768, 1e-5


def read_safetensors(path):
    """name -> float32 array; the format is a little-endian header length, a JSON header, the data."""
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        data = f.read()
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__" or entry["dtype"] != "F32":
            continue
        start, end = entry["data_offsets"]
        tensors[name] = np.frombuffer(data[start:end], dtype=np.float32).reshape(entry["shape"])
    return tensors


class Graph:
    def __init__(self):
        self.nodes, self.initializers = [], []

    def const(self, name, value):
        self.initializers.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def op(self, kind, inputs, out, **attributes):
        self.nodes.append(helper.make_node(kind, inputs, [out], name=out, **attributes))
        return out


def quantised_product(g, x, w, name):
    """x @ w in int8: w per output column (7 bits, as the runtime's u8 x s8 kernels need to stay
    clear of saturation), x per token, so a token's product depends on that token alone, never on
    the other texts or spans in its batch (one scale for the whole batch would let one span with
    large activations coarsen every other span's reading)."""
    w_scale = np.maximum(np.abs(w).max(0), 1e-8) / 63.0
    wq = g.const(f"{name}.weight_q", np.round(w / w_scale).astype(np.int8))
    x_scale = g.op("Div", [g.op("Max", [g.op("ReduceMax", [g.op("Abs", [x], f"{name}.abs")], f"{name}.amax", axes=[-1], keepdims=1), "tiny"], f"{name}.amax.safe"), "int8_max"], f"{name}.x_scale")
    xq = g.op("Cast", [g.op("Add", [g.op("Round", [g.op("Div", [x, x_scale], f"{name}.x_scaled")], f"{name}.x_rounded"), "uint8_zero"], f"{name}.x_shifted")], f"{name}.xq", to=TensorProto.UINT8)
    product = g.op("MatMulInteger", [xq, wq, "uint8_zero_point"], f"{name}.product_int")
    scaled = g.op("Mul", [g.op("Cast", [product], f"{name}.product_float", to=TensorProto.FLOAT), x_scale], f"{name}.product_x")
    return g.op("Mul", [scaled, g.const(f"{name}.w_scale", w_scale.astype(np.float32))], f"{name}.product")


def layers_graph(weights, hidden_size=HIDDEN, epsilon=EPSILON):
    """hidden (B, T, W) and bias (B, 12, T, T: relative positions and padding) -> last (B, T, W), W =
    hidden_size; as many layers as the weights hold."""
    layers = len({name.split(".")[2] for name in weights if name.startswith("encoder.layer.")})
    head_size = hidden_size // HEADS
    g = Graph()
    g.const("tiny", np.float32(1e-6))
    g.const("int8_max", np.float32(127.0))
    g.const("uint8_zero", np.float32(128.0))
    g.const("uint8_zero_point", np.uint8(128))
    g.const("heads_shape", np.array([0, 0, HEADS, head_size], np.int64))
    g.const("model_shape", np.array([0, 0, hidden_size], np.int64))
    g.const("scale", np.float32(head_size ** -0.5))
    g.const("half", np.float32(0.5))
    g.const("one", np.float32(1.0))
    g.const("inv_sqrt2", np.float32(2 ** -0.5))
    hidden = "hidden"
    for layer in range(layers):
        source, at = f"encoder.layer.{layer}.", f"layer{layer}."

        def linear(x, weight, out):
            b = g.const(f"{at}{out}.bias", weights[f"{source}{weight}.bias"])
            return g.op("Add", [quantised_product(g, x, weights[f"{source}{weight}.weight"].T, f"{at}{out}"), b], f"{at}{out}")

        def heads(name, perm):
            flat = linear(hidden, f"attention.attn.{name}", name)
            return g.op("Transpose", [g.op("Reshape", [flat, "heads_shape"], f"{at}{name}.heads")], f"{at}{name}.t", perm=perm)

        def norm(x, weight, out):
            scale = g.const(f"{at}{out}.scale", weights[f"{source}{weight}.weight"])
            shift = g.const(f"{at}{out}.shift", weights[f"{source}{weight}.bias"])
            return g.op("LayerNormalization", [x, scale, shift], f"{at}{out}", axis=-1, epsilon=epsilon)

        q, k, v = heads("q", [0, 2, 1, 3]), heads("k", [0, 2, 3, 1]), heads("v", [0, 2, 1, 3])
        scores = g.op("Add", [g.op("Mul", [g.op("MatMul", [q, k], f"{at}qk"), "scale"], f"{at}qk.scaled"), "bias"], f"{at}scores")
        mixed = g.op("MatMul", [g.op("Softmax", [scores], f"{at}weights", axis=-1), v], f"{at}mixed")
        mixed = g.op("Reshape", [g.op("Transpose", [mixed], f"{at}mixed.t", perm=[0, 2, 1, 3]), "model_shape"], f"{at}mixed.flat")
        attended = norm(g.op("Add", [linear(mixed, "attention.attn.o", "o"), hidden], f"{at}attended.sum"), "attention.LayerNorm", "attended")
        inner = linear(attended, "intermediate.dense", "inner")
        erf = g.op("Erf", [g.op("Mul", [inner, "inv_sqrt2"], f"{at}inner.scaled")], f"{at}erf")
        gelu = g.op("Mul", [g.op("Mul", [inner, "half"], f"{at}inner.half"), g.op("Add", [erf, "one"], f"{at}erf.plus1")], f"{at}gelu")
        hidden = norm(g.op("Add", [linear(gelu, "output.dense", "down"), attended], f"{at}down.sum"), "output.LayerNorm", "out")
    g.nodes.append(helper.make_node("Identity", [hidden], ["last"], name="last"))
    graph = helper.make_graph(
        g.nodes, "mpnet_layers",
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["B", "T", hidden_size]),
         helper.make_tensor_value_info("bias", TensorProto.FLOAT, ["B", HEADS, "T", "T"])],
        [helper.make_tensor_value_info("last", TensorProto.FLOAT, ["B", "T", hidden_size])], g.initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def write_encoder(weights, out_dir):
    """The graph and the embedding tables, from the weights (name -> float32 array)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    np.savez(out / "embeddings.npz",
             words=weights["embeddings.word_embeddings.weight"], positions=weights["embeddings.position_embeddings.weight"],
             norm_scale=weights["embeddings.LayerNorm.weight"], norm_shift=weights["embeddings.LayerNorm.bias"],
             relative_bias=weights["encoder.relative_attention_bias.weight"])
    onnx.save(layers_graph(weights), out / "encoder.onnx")


if __name__ == "__main__":
    write_encoder(read_safetensors(Path(sys.argv[1]) / "model.safetensors"), sys.argv[2])
