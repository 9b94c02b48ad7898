"""A loaded engine profile (:class:`Engine`, its :class:`Value` per level) and what the
``runs_on`` and ``[delegate]`` targets (``all``, ``vendor:<v>``, ``class:<c>``, ``device:<id>``)
match, checked against the hardware catalog."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from grids.errors import suggest
from grids.hardware import CLASSES, Device, load_catalog
from grids.sourced import Sourced

# --------------------------------------------------------------------------------------------
# loaded profiles


@dataclass(frozen=True)
class Value:
    """One resolved-to-be value of a level: SI number (or bool) and where it comes from."""

    value: float | bool
    origin: str
    sourced: Sourced | None = None
    #: the file marks it ``pooled = true``: a prior that an overlay's ``[pooled]`` value replaces
    pooled: bool = False


Levels = Mapping[tuple[str, str], Mapping[str, Value]]


@dataclass(frozen=True)
class Build:
    """One release of an engine other than the one its file's tables describe: what differs
    (``levels``, same shape as :attr:`Engine.levels`), when it was released, and which
    ``engine_version`` texts of measurement rows name it (``matches``, prefixes)."""

    name: str
    released: str
    description: str
    source: str
    matches: tuple[str, ...]
    levels: Levels
    #: another build of the file whose fitted values (its overlay section) this build takes where
    #: its own rows fit none, before the file's fit: a release of the same engine generation,
    #: closer to this one than the file's own build ("" = none)
    fit_fallback: str = ""
    #: the build's measurement rows fit its own overlay section even when the calibration fits
    #: every other release of the file together (``sweep calibrate`` without ``--by-build``): a
    #: release whose host loop and kernels differ so much from the file's that its rows would
    #: otherwise set the values every other release inherits
    fit_apart: bool = False


@dataclass(frozen=True)
class Engine:
    """A loaded engine profile. ``levels`` maps ``(level, key)`` (``("defaults", "")``,
    ``("vendor", "AMD")``, ``("class", "gpu")``, ``("device", "h100-sxm")``) to flat parameter
    keys (``iteration_overhead``, ``decode_compute.bf16``, ...) -> :class:`Value`.

    ``build`` names the release the file's tables describe (what the bare id means); ``builds``
    holds the file's other releases. A profile loaded as ``<id>@<build>`` has ``id``
    ``"<id>@<build>"``, ``family`` the file's id and ``active`` that build (None: the file's
    own build)."""

    id: str
    name: str
    description: str
    versions: str
    runs_on: tuple[str, ...]
    notes: tuple[str, ...]
    levels: Mapping[tuple[str, str], Mapping[str, Value]]
    delegate: tuple[tuple[str, str], ...] = ()
    where: str = ""
    build: str = ""
    builds: Mapping[str, Build] = field(default_factory=dict)
    family: str = ""
    active: Build | None = None

    @property
    def file_id(self) -> str:
        """The id of the engine file (and of its calibration overlay section)."""
        return self.family or self.id

    def build_names(self) -> tuple[str, ...]:
        """Every release this file describes: its own first, then its ``[builds]``."""
        return ((self.build,) if self.build else ()) + tuple(self.builds)

    def build_for_version(self, version: str) -> str | None:
        """The build whose ``matches`` prefixes the ``engine_version`` text ``version`` starts
        with (the longest prefix wins), or None (the file's own build)."""
        text = str(version).strip()
        best: tuple[int, str] | None = None
        for b in self.builds.values():
            for m in b.matches:
                if text.startswith(m) and (best is None or len(m) > best[0]):
                    best = (len(m), b.name)
        return None if best is None else best[1]

    def runs_on_device(self, device: Device) -> bool:
        """Whether a ``runs_on`` entry matches ``device`` (a hypothetical one as its base)."""
        return any(_target_matches(t, device) for t in self.runs_on)

    def delegate_for(self, device: Device) -> tuple[str, str] | None:
        """``(target key, engine id)`` of the most specific ``[delegate]`` entry for ``device``."""
        best = None
        for target, engine_id in self.delegate:
            if _target_matches(target, device):
                rank = _TARGET_RANK[target.partition(":")[0]]
                if best is None or rank > best[0]:
                    best = (rank, target, engine_id)
        return None if best is None else (best[1], best[2])

    def sources(self) -> dict[str, Sourced]:
        """Every sourced number of the file, keyed ``<level>[.<key>].<parameter>``."""
        out = {}
        for (level, key), values in self.levels.items():
            for name, v in values.items():
                if v.sourced is not None:
                    out[f"{level}.{key}.{name}" if key else f"{level}.{name}"] = v.sourced
        return out


_TARGET_RANK = {"all": 0, "class": 1, "vendor": 2, "device": 3}


def _target_matches(target: str, device: Device) -> bool:
    kind, _, value = target.partition(":")
    if kind == "all":
        return True
    if kind == "vendor":
        return device.vendor == value
    if kind == "class":
        return device.cls == value
    return kind == "device" and (device.base or device.id) == value


# --------------------------------------------------------------------------------------------
# catalog context (vendors, classes, device ids of the hardware catalog)


@functools.cache
def _catalog_devices() -> dict[str, Device]:
    return load_catalog()


def _known_vendors() -> tuple[str, ...]:
    return tuple(sorted({d.vendor for d in _catalog_devices().values()}))


def _suggest(name: str, known: Iterable[str]) -> str:
    """``suggest`` that also catches a difference of case only ('Nvidia' -> 'NVIDIA')."""
    known = list(known)
    same = [k for k in known if k.lower() == str(name).lower()]
    return f" (did you mean {same[0]!r}?)" if same else suggest(name, known)


def _check_target(text: Any, where: str, problems: list[str], *, allow_all: bool = True) -> bool:
    """A ``runs_on`` / ``[delegate]`` key: ``all``, ``vendor:<v>``, ``class:<c>``, ``device:<id>``
    that matches at least one catalog device."""
    if not isinstance(text, str):
        problems.append(f"{where}: {text!r} must be a string such as \"vendor:NVIDIA\"")
        return False
    if text == "all":
        if allow_all:
            return True
        problems.append(f"{where}: 'all' is not allowed here")
        return False
    kind, sep, value = text.partition(":")
    devices = _catalog_devices().values()
    if not sep or kind not in ("vendor", "class", "device") or not value:
        problems.append(f"{where}: {text!r} is not 'all', 'vendor:<vendor>', 'class:<class>' or "
                        f"'device:<id>'")
        return False
    if kind == "vendor" and not any(d.vendor == value for d in devices):
        problems.append(f"{where}: {text!r} matches no catalog device (vendor strings are "
                        f"exact){_suggest(value, _known_vendors())}")
        return False
    if kind == "class" and not any(d.cls == value for d in devices):
        problems.append(f"{where}: {text!r} matches no catalog device{suggest(value, CLASSES)}")
        return False
    if kind == "device" and value not in _catalog_devices():
        problems.append(f"{where}: {text!r} matches no catalog device"
                        f"{suggest(value, _catalog_devices())}")
        return False
    return True
