"""Small torch networks for DSOKR's surrogate regressors (the ``torch`` extra).

Each network is built from plain configuration values only (``self.config``), so the safe
model format saves it as that configuration plus its ``state_dict`` arrays and rebuilds
it without running code from the file: the format's allow-list
(``sprokr.persistence._spec.TORCH_NETWORKS``, the keys of :data:`NETWORKS`) names the
class, and the loader calls the class's public :meth:`ConfigNetwork.from_state`.

* :class:`ResidualMLP`: vectors -> ``W x + b + MLP(x)``: a linear path next to the
  hidden layers, so that a linear model (ridge on kernel features = SISOKR's hypothesis
  space) is a special case the network starts close to (the MLP's last layer starts at 0).
* :class:`TokenCNN`: token ids -> embedding -> 1-D convolutions of several widths ->
  ReLU -> max over positions (padding masked) -> MLP head.
* :class:`TokenTransformer`: token ids -> embedding + learned positions -> pre-norm
  transformer encoder -> mean and max over positions (padding masked) -> MLP head.

Inputs of the token networks are int64 arrays (n, L) with ``0`` for padding (the
tokenizers of :mod:`sprokr.models.tokenizers`).
"""
from __future__ import annotations

import torch
import torch.nn as nn

__all__ = ["ConfigNetwork", "ResidualMLP", "TokenCNN", "TokenTransformer", "NETWORKS"]

_ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU, "tanh": nn.Tanh}


def _activation(name):
    if name not in _ACTIVATIONS:
        raise ValueError(f"activation must be one of {sorted(_ACTIVATIONS)}, got {name!r}")
    return _ACTIVATIONS[name]()


def _head(width, hidden, n_outputs, dropout, activation="relu"):
    layers = []
    for h in hidden:
        layers += [nn.Linear(width, h), _activation(activation), nn.Dropout(dropout)]
        width = h
    layers.append(nn.Linear(width, n_outputs))
    return nn.Sequential(*layers)


def _padding_mask(tok, pad_index):
    return tok == pad_index  # (b, L) True at padding


class ConfigNetwork(nn.Module):
    """A network rebuilt from ``config`` (plain values: its constructor's arguments) and
    its ``state_dict`` -- the protocol of the safe model format for torch networks."""

    config: dict

    @classmethod
    def from_state(cls, config: dict, state: dict) -> ConfigNetwork:
        """``cls(**config)`` with the tensors ``state`` loaded (``strict``: every name must
        match; a mismatch raises ``RuntimeError``, a bad configuration ``TypeError`` or
        ``ValueError``).  Called by :func:`sprokr.load` on an allow-listed class."""
        net = cls(**config)
        net.load_state_dict(state, strict=True)
        return net


class ResidualMLP(ConfigNetwork):
    """``x -> W x + b + MLP(x)`` for vector inputs (module doc)."""

    def __init__(self, n_features, n_outputs, hidden=(512,), activation="relu", dropout=0.0):
        super().__init__()
        self.config = {"n_features": int(n_features), "n_outputs": int(n_outputs), "hidden": [int(h) for h in hidden],
                       "activation": activation, "dropout": float(dropout)}
        self.linear = nn.Linear(n_features, n_outputs)
        self.mlp = _head(n_features, hidden, n_outputs, dropout, activation) if hidden else None
        if self.mlp is not None:  # start as the linear model: the nonlinear part is learned on top
            nn.init.zeros_(self.mlp[-1].weight)
            nn.init.zeros_(self.mlp[-1].bias)

    def forward(self, x):
        out = self.linear(x)
        return out if self.mlp is None else out + self.mlp(x)


class TokenCNN(ConfigNetwork):
    """Convolutions of several widths over token embeddings, max-pooled (module doc)."""

    def __init__(self, vocab_size, n_outputs, embed_dim=64, channels=256, kernel_sizes=(3, 5, 7), hidden=(512,),
                 dropout=0.1, pad_index=0):
        super().__init__()
        self.config = {"vocab_size": int(vocab_size), "n_outputs": int(n_outputs), "embed_dim": int(embed_dim),
                       "channels": int(channels), "kernel_sizes": [int(k) for k in kernel_sizes],
                       "hidden": [int(h) for h in hidden], "dropout": float(dropout), "pad_index": int(pad_index)}
        self.pad_index = int(pad_index)
        self.embed = nn.Embedding(vocab_size, embed_dim, padding_idx=pad_index)
        self.convs = nn.ModuleList([nn.Conv1d(embed_dim, channels, k, padding=k // 2) for k in kernel_sizes])
        self.head = _head(channels * len(kernel_sizes), hidden, n_outputs, dropout)

    def forward(self, tok):
        L = tok.shape[1]
        pad = _padding_mask(tok, self.pad_index)[:, None, :]
        e = self.embed(tok).transpose(1, 2)  # (b, E, L)
        pooled = []
        for conv in self.convs:
            z = torch.relu(conv(e))[:, :, :L]  # even widths give L + 1 positions
            pooled.append(z.masked_fill(pad, 0.0).amax(dim=2))  # ReLU >= 0: 0 at padding is neutral
        return self.head(torch.cat(pooled, dim=1))


class TokenTransformer(ConfigNetwork):
    """A small pre-norm transformer encoder over tokens, mean- and max-pooled (module doc)."""

    def __init__(self, vocab_size, n_outputs, max_length, d_model=128, n_heads=4, n_layers=2, ff_dim=256,
                 hidden=(512,), dropout=0.1, pad_index=0):
        super().__init__()
        self.config = {"vocab_size": int(vocab_size), "n_outputs": int(n_outputs), "max_length": int(max_length),
                       "d_model": int(d_model), "n_heads": int(n_heads), "n_layers": int(n_layers),
                       "ff_dim": int(ff_dim), "hidden": [int(h) for h in hidden], "dropout": float(dropout),
                       "pad_index": int(pad_index)}
        self.pad_index = int(pad_index)
        self.embed = nn.Embedding(vocab_size, d_model, padding_idx=pad_index)
        self.position = nn.Embedding(max_length, d_model)
        layer = nn.TransformerEncoderLayer(d_model, n_heads, ff_dim, dropout, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.head = _head(2 * d_model, hidden, n_outputs, dropout)

    def forward(self, tok):
        tok = tok[:, :self.position.num_embeddings]
        pad = _padding_mask(tok, self.pad_index)
        pos = torch.arange(tok.shape[1], device=tok.device)
        # an all-padding row (an empty text) masked everywhere makes attention NaN: let it
        # attend to its padding; the pooling below still ignores those positions
        attn_pad = pad & ~pad.all(dim=1, keepdim=True)
        h = self.norm(self.encoder(self.embed(tok) + self.position(pos)[None], src_key_padding_mask=attn_pad))
        keep = (~pad)[:, :, None].to(h.dtype)
        mean = h.masked_fill(pad[:, :, None], 0.0).sum(dim=1) / keep.sum(dim=1).clamp_min(1.0)
        mx = h.masked_fill(pad[:, :, None], float("-inf")).amax(dim=1)
        mx = torch.where(torch.isfinite(mx), mx, torch.zeros_like(mx))  # an all-padding row
        return self.head(torch.cat([mean, mx], dim=1))


#: networks the safe model format rebuilds from ``config`` + ``state_dict``
NETWORKS = {f"sprokr.models._torch_nets:{c.__name__}": c for c in (ResidualMLP, TokenCNN, TokenTransformer)}

