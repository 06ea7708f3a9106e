"""GNMT (v2, the MLPerf training reference) built from its architecture with the workload builder.

Sources (docs/gnmt.md has the derivation table):
[WU16]  Y. Wu et al., "Google's Neural Machine Translation System", arXiv 1609.08144 (2016): stacked
        LSTM encoder and decoder with attention, bottom encoder layer bidirectional, residual connections
        from the third layer, shared wordpiece vocabulary. Its production model has 8 + 8 layers.
[MLPERF] mlcommons/training, rnn_translator/README.md ("4. Model / Structure") and
        rnn_translator/pytorch/seq2seq/models/{gnmt,encoder}.py, pytorch/train.py: the 4 + 4 layer
        GNMT v2 the MLPerf benchmark trains: hidden 1024, first encoder layer bidirectional, the second
        takes 2 x 1024 inputs, shared embeddings, normalized Bahdanau attention fed by the first decoder
        layer and concatenated into the inputs of the other decoder layers, a fully-connected classifier;
        train.py: ``--train-batch-size`` 128 per worker, ``--max-length-train`` 50.
[NVDLE] NVIDIA/DeepLearningExamples, PyTorch/Translation/GNMT: seq2seq/models/{decoder,attention}.py
        (the same decoder and attention code; the mlcommons copies of these two files are not in our
        index) and seq2seq/data/tokenizer.py (vocabulary padded to a multiple of 8 for fp16).
        mlcommons/training_results_v0.6 NVIDIA/benchmarks/gnmt/implementations/pytorch/seq2seq/models/
        decoder.py has the same structure; training_results_v0.7 .../config_DGX1.sh trains in fp16.
[MLBENCH] mlbench/mlbench.github.io, _posts/2020-10-02-nlp-translation.md: this 4 + 4 layer,
        1024-hidden GNMT has 160,671,297 trainable parameters. Everything else in the model is fixed by
        the dimensions above, and the count is 2049 * V + 94,447,617, so it implies V = 32,320 exactly.

Our choices (labelled where used): batch per NPU, sequence lengths, byte widths, the fused attention
score, and the placement of attention in the layer chain (after the first decoder LSTM, which is both
where [MLPERF] computes it and after the encoder output it also reads).
"""
from __future__ import annotations

from .builder import WorkloadBuilder
from .model import Workload

#: [MLBENCH]: trainable parameters of MLPerf GNMT (4 + 4 layers, hidden 1024, shared embeddings, V = 32320).
PUBLISHED_PARAMS = 160_671_297
#: The shared BPE vocabulary ([MLPERF] README: 32,000 merges) plus PAD, UNK, BOS, EOS ([NVDLE] data/config.py),
#: padded to a multiple of 8 for fp16 ([NVDLE] data/tokenizer.py); [MLBENCH]'s parameter count pins 32,320.
VOCAB = 32_320
HIDDEN = 1024        # [MLPERF] README: "hidden size 1024"; train.py --hidden-size 1024
LAYERS = 4           # [MLPERF] README: 4-layer encoder, 4-layer decoder; train.py --num-layers 4
BATCH_PER_NPU = 128  # [MLPERF] train.py --train-batch-size 128 ("per worker"); [NVDLE] README: 128 per GPU
MAX_LEN = 50         # [MLPERF] train.py --max-length-train 50 (incl. BOS/EOS): our choice of length, an upper bound


def gnmt_builder(batch_per_npu: int = BATCH_PER_NPU, src_len: int = MAX_LEN, tgt_len: int = MAX_LEN,
                 vocab: int = VOCAB, hidden: int = HIDDEN, enc_layers: int = LAYERS, dec_layers: int = LAYERS,
                 share_embedding: bool = True, grad_bytes_per_param: float = 4.0, act_bytes: float = 2.0,
                 update_s_per_param: float = 0.0, name: str = "gnmt") -> WorkloadBuilder:
    """The builder holding GNMT's layers (``.table()`` prints the derivation); see ``gnmt``."""
    if enc_layers < 2 or dec_layers < 2:
        raise ValueError("GNMT needs at least 2 encoder layers (bidirectional, then 2H -> H) and 2 decoder "
                         f"layers (attention LSTM, then 2H -> H); got {enc_layers} and {dec_layers}")
    h = hidden
    b = WorkloadBuilder(name, batch=batch_per_npu, grad_bytes_per_param=grad_bytes_per_param,
                        act_bytes=act_bytes, update_s_per_param=update_s_per_param,
                        source="codesign.workload.gnmt (built from the GNMT v2 architecture)")
    # encoder [MLPERF] encoder.py: embedding, a bidirectional LSTM, one LSTM taking its 2H output, then
    # H -> H LSTMs (residual adds from the third layer cost no parameters and are not counted)
    b.embedding("enc_embedding", vocab, h, tokens_per_sample=src_len)
    b.lstm("enc_lstm1", h, h, seq_len=src_len, bidirectional=True)
    b.lstm("enc_lstm2", 2 * h, h, seq_len=src_len)
    for i in range(3, enc_layers + 1):
        b.lstm(f"enc_lstm{i}", h, h, seq_len=src_len)
    # decoder [MLPERF] gnmt.py shares one nn.Embedding between encoder and decoder (share_embedding=True);
    # DDP all-reduces it once, after the encoder's use, the last in backward: the tie puts it there
    b.embedding("dec_embedding", vocab, h, tokens_per_sample=tgt_len,
                tie_to="enc_embedding" if share_embedding else None)
    # [NVDLE] decoder.py RecurrentAttention: the first decoder LSTM runs over the whole (teacher-forced)
    # target sequence, then attention scores all its outputs against the encoder output at once, so in
    # training there is no per-step input feeding to model: the chain order below is the data flow
    b.lstm("dec_lstm1", h, h, seq_len=tgt_len)
    # [NVDLE] attention.py BahdanauAttention(query H, key H, units H, normalize=True); keys = encoder output
    b.attention("attention", h, h, h, query_len=tgt_len, key_len=src_len, normalize=True)
    # [NVDLE] decoder.py: the other decoder LSTMs take [x, attention context] = 2H inputs
    for i in range(2, dec_layers + 1):
        b.lstm(f"dec_lstm{i}", 2 * h, h, seq_len=tgt_len)
    # [NVDLE] decoder.py Classifier: nn.Linear(H, V) with bias, not tied to the embedding
    b.linear("classifier", h, vocab, tokens_per_sample=tgt_len, bias=True)
    # the label-smoothed cross-entropy over V logits per token ([MLPERF] README "Loss function"): a
    # softmax's work; it has no parameters and so no all-reduce
    b.softmax("loss", vocab, tokens_per_sample=tgt_len)
    return b


def gnmt(batch_per_npu: int = BATCH_PER_NPU, src_len: int = MAX_LEN, tgt_len: int = MAX_LEN, vocab: int = VOCAB,
         hidden: int = HIDDEN, enc_layers: int = LAYERS, dec_layers: int = LAYERS, share_embedding: bool = True,
         grad_bytes_per_param: float = 4.0, act_bytes: float = 2.0, update_s_per_param: float = 0.0,
         name: str = "gnmt") -> Workload:
    """GNMT v2 as MLPerf trains it, data parallel, per NPU.

    Defaults: architecture as cited in the module docstring; batch 128 per NPU (the reference's default);
    source and target length 50 tokens (our choice: the reference's training maximum, so an upper bound
    on a batch's padded length); activations 2 bytes (our choice: fp16 mixed precision, as NVIDIA's MLPerf
    submissions train); gradients all-reduced at 4 bytes per parameter (our choice: fp32, as ASTRA-sim's
    ResNet-50 workload; fp16 all-reduce would halve every collective); no optimizer update delay.
    Layers, in forward data-flow order: enc_embedding, enc_lstm1..N, dec_embedding (tied), dec_lstm1,
    attention, dec_lstm2..N, classifier, loss.
    """
    return gnmt_builder(batch_per_npu, src_len, tgt_len, vocab, hidden, enc_layers, dec_layers, share_embedding,
                        grad_bytes_per_param, act_bytes, update_s_per_param, name).build()
