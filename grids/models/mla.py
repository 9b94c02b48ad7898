"""Multi-head latent attention (MLA, DeepSeek): the ranks ``kv_lora_rank``, ``q_lora_rank``,
``qk_rope_head_dim``, ``qk_nope_head_dim`` and ``v_head_dim``."""

from __future__ import annotations

from dataclasses import dataclass

from grids.models.fields import _Ctx, _int, _known


@dataclass
class _Mla:
    """MLA ranks of a config without problems (q_lora: None or 0 without a query LoRA)."""

    kv_lora: int
    q_lora: int | None
    rope: int
    nope: int
    vdim: int


@dataclass
class _ReadMla:
    """MLA ranks as read: None where a field is missing or invalid (a problem says so)."""

    kv_lora: int | None
    q_lora: int | None
    rope: int | None
    nope: int | None
    vdim: int | None

    def checked(self) -> _Mla:
        """The ranks, once the config has no problem."""
        return _Mla(_known(self.kv_lora), self.q_lora, _known(self.rope), _known(self.nope),
                    _known(self.vdim))


def _read_mla(x: _Ctx) -> _ReadMla | None:
    c, p = x.c, x.problems
    if c.get("kv_lora_rank") is None:
        return None
    return _ReadMla(kv_lora=_int(c, "kv_lora_rank", p),
                    q_lora=_int(c, "q_lora_rank", p, required=False),
                    rope=_int(c, "qk_rope_head_dim", p), nope=_int(c, "qk_nope_head_dim", p),
                    vdim=_int(c, "v_head_dim", p))
