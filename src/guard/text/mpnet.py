"""all-mpnet-base-v2 sentence embeddings: the text guard's encoder.

The embeddings, the relative-position bias and the mean pooling run in numpy; the 12 transformer
layers run in onnxruntime from the graph build_encoder.py writes at setup. Embeddings are
mean-pooled over the attention mask and L2-normalised, as the model was trained to be used.
"""
import math
from pathlib import Path

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from batching import mean_pooled, padded_batches

BUCKETS, MAX_DISTANCE = 32, 128  # MPNet's relative positions: 16 buckets each way, log-spaced past 8
PAD = 1  # its padding id, also the offset of its position ids


def relative_buckets(length):
    """(T, T) bucket of each key position relative to each query position, as MPNet computes it."""
    at = np.arange(length)
    distance = at[:, None] - at[None, :]  # query minus key
    half = BUCKETS // 2
    bucket = (distance < 0).astype(np.int64) * half
    distance = np.abs(distance)
    exact = half // 2
    far = exact + (np.log(np.maximum(distance, 1) / exact) / math.log(MAX_DISTANCE / exact) * (half - exact)).astype(np.int64)
    return bucket + np.where(distance < exact, distance, np.minimum(far, half - 1))


class MpNet:
    def __init__(self, directory, threads):
        directory = Path(directory)
        self.tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        self.cls, self.sep = self.tokenizer.token_to_id("<s>"), self.tokenizer.token_to_id("</s>")
        tables = np.load(directory / "embeddings.npz")
        self.words, self.positions = tables["words"], tables["positions"]
        self.norm_scale, self.norm_shift, self.relative_bias = tables["norm_scale"], tables["norm_shift"], tables["relative_bias"]
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        self.session = ort.InferenceSession(str(directory / "encoder.onnx"), options, providers=["CPUExecutionProvider"])

    def ids(self, text):
        """The text's token ids without <s> and </s>."""
        return self.tokenizer.encode(text).ids[1:-1]

    def embed(self, windows):
        """L2-normalised mean-pooled embeddings of token-id windows (<s> and </s> included), in batches."""
        out = []
        for ids, mask in padded_batches(windows, PAD):
            positions = np.cumsum(mask, 1) * mask + PAD
            x = self.words[ids] + self.positions[positions]
            mean = x.mean(-1, keepdims=True)
            x = (x - mean) / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + 1e-5) * self.norm_scale + self.norm_shift
            bias = self.relative_bias[relative_buckets(ids.shape[1])].transpose(2, 0, 1)[None] + (mask[:, None, None, :] - 1) * 1e9
            last = self.session.run(None, {"hidden": x.astype(np.float32), "bias": bias.astype(np.float32)})[0]
            out.append(mean_pooled(last, mask))
        return np.concatenate(out) if out else np.zeros((0, 768), np.float32)

