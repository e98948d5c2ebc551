"""rooftop: how far each GPU/CPU kernel is from what the hardware allows, and why.

The Python face of the ``rooftop`` command. Each function runs what the command of the
same name runs, through the same Rust libraries, and returns a report whose tables are
pandas DataFrames (pyarrow Tables when pandas is not installed)::

    import rooftop
    t = rooftop.trace("step.json.gz")          # rooftop trace step.json.gz
    t.ops                                      # ops by GPU kernel time
    t.categories["GEMM"]                       # per-op roofline table of the GEMMs
    t.findings                                 # what to fix first
    t                                          # in Jupyter: the HTML report

Every number in a table is the one ``rooftop ... --format json`` writes for the same
input: the tables are read from that JSON (``report.to_dict()``), column for column
(nested objects as dotted columns, ``kernel_time_us.sum``). A value rooftop could not
measure or compute is missing (``NaN``/``None``), never 0.

Errors raise :class:`InputError` (bad input: the command's exit code 2) or
:class:`RooftopError` (anything else), with the sentence the command prints after
``rooftop: error:``. What the command prints as a note or warning on stderr (the device
a trace names is not in the catalog, ...) is a :class:`RooftopWarning`.
"""

from __future__ import annotations

import html as _html
import json
import os
import warnings
from typing import (
    Any,
    Dict,
    Iterable,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Union,
)

from . import _rooftop
from ._frames import frame as _frame
from ._rooftop import InputError, RooftopError

__version__: str = _rooftop.__version__

PathLike = Union[str, "os.PathLike[str]"]

__all__ = [
    "AnalysisReport",
    "BenchReport",
    "CountersReport",
    "DeviceReport",
    "InputError",
    "ModelReport",
    "RanksReport",
    "Report",
    "RooftopError",
    "RooftopWarning",
    "TraceReport",
    "analyze",
    "bench",
    "counters",
    "device",
    "devices",
    "model",
    "trace",
    "trace_ranks",
]


class RooftopWarning(UserWarning):
    """A note or warning the ``rooftop`` command prints on stderr."""


def _warn(native: Any) -> None:
    for note in native.notes:
        warnings.warn(note, RooftopWarning, stacklevel=3)


def _paths(files: Iterable[PathLike]) -> List[str]:
    return [os.fspath(f) for f in files]


def _json_default(value: Any) -> Any:
    # NumPy scalars (a shape taken from a tensor) are plain numbers to rooftop.
    item = getattr(value, "item", None)
    if callable(item):
        return item()
    raise TypeError(f"{value!r} is not a number, string or list")


class _Tables(Mapping[str, Any]):
    """Tables by name, each made on first use."""

    def __init__(self, rows: Mapping[str, Any]) -> None:
        self._rows = rows
        self._made: Dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._rows:
            raise KeyError(f"{name!r}: the report has {', '.join(self._rows) or 'none'}")
        if name not in self._made:
            self._made[name] = _frame(self._rows[name])
        return self._made[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)

    def __repr__(self) -> str:
        return f"<tables {list(self._rows)}>"


class Report:
    """A rooftop report: the JSON, HTML and text the command writes for it, and its
    tables as DataFrames."""

    def __init__(self, native: Any) -> None:
        self._native = native
        self._json: Optional[str] = None
        self._data: Optional[Any] = None
        self._frames: Dict[str, Any] = {}

    # -- the report as the command writes it ---------------------------------------

    def to_json(self) -> str:
        """The report as ``rooftop ... --format json`` writes it."""
        if self._json is None:
            self._json = self._native.render("json")
        return self._json

    def to_dict(self) -> Any:
        """The report as ``rooftop ... --format json`` writes it, parsed (a new copy on
        every call)."""
        return json.loads(self.to_json())

    def to_html(self) -> str:
        """The self-contained HTML page of ``rooftop ... --format html``."""
        return self._native.render("html")

    def to_text(self, top: Optional[int] = None) -> str:
        """The terminal table of ``rooftop ...`` (``top``: rows per table, ``--top``)."""
        return self._native.render("table", top=top)

    def to_markdown(self, top: Optional[int] = None) -> str:
        """The Markdown of ``rooftop ... --format md``."""
        return self._native.render("md", top=top)

    def __str__(self) -> str:
        return self.to_text()

    def _repr_html_(self) -> str:
        # The page carries its own styles and scripts: an iframe keeps them from the
        # notebook's.
        page = _html.escape(self.to_html(), quote=True)
        return (
            f'<iframe srcdoc="{page}" style="width:100%;height:720px;border:0" '
            f'sandbox="allow-scripts"></iframe>'
        )

    # -- tables --------------------------------------------------------------------

    @property
    def _dict(self) -> Any:
        if self._data is None:
            self._data = json.loads(self.to_json())
        return self._data

    def _at(self, path: str) -> Any:
        node = self._dict
        for part in path.split("."):
            if not isinstance(node, dict) or part not in node:
                raise KeyError(f"the report has no `{path}`")
            node = node[part]
        return node

    def table(self, path: str) -> Any:
        """Any list of objects in the JSON report as a DataFrame, by its dotted path
        (``"launch.top_delays"``, ``"critical_path.ranked"``)."""
        if path not in self._frames:
            rows = self._at(path)
            if not isinstance(rows, list):
                raise KeyError(f"`{path}` is not a table (a list of objects) in the report")
            self._frames[path] = _frame(rows)
        return self._frames[path]

    def __repr__(self) -> str:
        return f"<rooftop.{type(self).__name__}>"


class TraceReport(Report):
    """One trace's analysis: ``rooftop trace FILE``."""

    def __init__(self, native: Any, path: str) -> None:
        super().__init__(native)
        self.path = path

    def to_text(self, top: Optional[int] = None, section: str = "summary") -> str:  # type: ignore[override]
        """The terminal table of ``rooftop trace --section SECTION --top TOP``."""
        return self._native.render("table", top=top, section=section)

    def to_markdown(self, top: Optional[int] = None, section: str = "summary") -> str:  # type: ignore[override]
        """The Markdown of ``rooftop trace --format md --section SECTION``."""
        return self._native.render("md", top=top, section=section)

    @property
    def device(self) -> Dict[str, Any]:
        """The GPU the trace names and the catalog entry the roofline numbers use."""
        return dict(self._dict["device"])

    @property
    def window(self) -> Dict[str, Any]:
        """The analysed window (start, end, duration and how it was chosen)."""
        return dict(self._dict["window"])

    @property
    def timeline(self) -> Any:
        """GPU time by kind (computation, communication, memcpy, idle, ...): one row per
        kind, ``time_ms`` and ``percent`` of the window (TraceLens's GPU timeline)."""
        if "timeline" not in self._frames:
            t = self._dict["timeline"]
            rows = [
                {"type": k, **v}
                for k, v in t.items()
                if isinstance(v, dict) and "time_ms" in v
            ]
            self._frames["timeline"] = _frame(rows, ["type", "time_ms", "percent"])
        return self._frames["timeline"]

    @property
    def timeline_per_device(self) -> Any:
        """The timeline per GPU: one row per device."""
        return self.table("timeline.per_device")

    @property
    def ops(self) -> Any:
        """Ops by GPU kernel time (direct and subtree), with category, count and percent:
        the ``ops_summary.ops`` table."""
        return self.table("ops_summary.ops")

    @property
    def ops_by_category(self) -> Any:
        """GPU kernel time by op category."""
        return self.table("ops_summary.by_category")

    @property
    def categories(self) -> Mapping[str, Any]:
        """The per-op roofline tables by category (``GEMM``, ``SDPA_fwd``,
        ``CONV_fwd``, ``Normalization``, ..., ``unmodelled``): FLOPs, bytes, kernel
        time, achieved rates, attainment, bound and the top finding of each op."""
        if "categories" not in self._frames:
            self._frames["categories"] = _Tables(self._dict["categories"])
        return self._frames["categories"]

    @property
    def roofline(self) -> Any:
        """Every category's roofline rows in one table (column ``category``)."""
        if "roofline" not in self._frames:
            rows = [r for rs in self._dict["categories"].values() for r in rs]
            self._frames["roofline"] = _frame(rows)
        return self._frames["roofline"]

    @property
    def kernels(self) -> Any:
        """Kernels by total time, with their op, stream and time statistics."""
        return self.table("kernels")

    @property
    def short_kernels(self) -> Any:
        """Kernels shorter than the threshold, by the op and shapes that launched them."""
        return self.table("short_kernels.rows")

    @property
    def findings(self) -> Any:
        """What limits the trace, most time at stake first."""
        return self.table("findings")

    @property
    def warnings(self) -> List[str]:
        """What the reader could not use, in sentences."""
        return list(self._dict["warnings"])

    @property
    def idle(self) -> Any:
        """GPU idle time per stream and cause (host wait, kernel wait, other, graph), with
        gap statistics: HTA's idle time breakdown."""
        if "idle" not in self._frames:
            rows = [
                {"device": s["device"], "stream": s["stream"], **c}
                for s in self._dict["idle"]["streams"]
                for c in s["categories"]
            ]
            self._frames["idle"] = _frame(rows)
        return self._frames["idle"]

    @property
    def idle_devices(self) -> Any:
        """GPU idle time per device and cause."""
        if "idle_devices" not in self._frames:
            rows = [
                {"device": d["device"], "window_us": d["window_us"], **c}
                for d in self._dict["idle"]["devices"]
                for c in d["categories"]
            ]
            self._frames["idle_devices"] = _frame(rows)
        return self._frames["idle_devices"]

    @property
    def launches(self) -> Any:
        """The longest launch delays (CPU launch to GPU start), one row per kernel."""
        return self.table("launch.top_delays")

    @property
    def syncs(self) -> Any:
        """Host synchronisations and the time they blocked."""
        return self.table("syncs.rows")

    @property
    def critical_path(self) -> Any:
        """The events on the critical path, in order, with the time each is on it."""
        return self.table("critical_path.events")

    @property
    def critical_path_ops(self) -> Any:
        """Time on the critical path by op."""
        return self.table("critical_path.by_op")

    @property
    def modules(self) -> Any:
        """``nn.Module`` calls with CPU and GPU time."""
        return self.table("modules.nodes")

    @property
    def memory(self) -> Any:
        """Memory use per device (allocations, peak)."""
        return self.table("memory.devices")

    def __repr__(self) -> str:
        d = self._dict
        dev = d["device"].get("catalog_id") or d["device"].get("trace_name") or "no device"
        ms = d["window"]["duration_ms"]
        return (
            f"<rooftop.TraceReport {os.path.basename(self.path)!r} on {dev}: "
            f"{ms:.3g} ms, {len(d['kernels'])} kernels, {len(d['findings'])} findings>"
        )


class RanksReport(Report):
    """A directory of per-rank traces: ``rooftop trace DIR``."""

    def __init__(self, native: Any, path: str) -> None:
        super().__init__(native)
        self.path = path
        self._rank_reports: Optional[List[Dict[str, Any]]] = None

    @property
    def ranks(self) -> Any:
        """The cross-rank table: one row per rank (computation, communication, waits)."""
        return self.table("cross_rank.ranks")

    @property
    def stragglers(self) -> Any:
        """How late each rank arrives at the collectives."""
        return self.table("cross_rank.stragglers")

    @property
    def findings(self) -> Any:
        """The cross-rank findings."""
        return self.table("cross_rank.findings")

    @property
    def collectives(self) -> Any:
        """The collectives matched across ranks, with bus bandwidth."""
        return self.table("cross_rank.collectives.collectives")

    def rank(self, index: int) -> Dict[str, Any]:
        """The ``index``-th rank's own report (as ``TraceReport.to_dict()``)."""
        return dict(self._dict["ranks"][index])

    def __repr__(self) -> str:
        d = self._dict
        return (
            f"<rooftop.RanksReport {os.path.basename(os.path.normpath(self.path))!r}: "
            f"{len(d['ranks'])} ranks>"
        )


class CountersReport(Report):
    """Vendor profiler counters: ``rooftop counters PATH``."""

    def to_text(self, top: Optional[int] = None, dispatches: bool = False) -> str:  # type: ignore[override]
        """The terminal table of ``rooftop counters --top TOP [--dispatches]``."""
        return self._native.render("table", top=top, dispatches=dispatches)

    @property
    def kernels(self) -> Any:
        """One row per kernel name: bytes per level, FLOPs, hit rates, occupancy, roofline."""
        return self.table("kernels")

    @property
    def dispatches(self) -> Any:
        """One row per dispatch."""
        return self.table("dispatches")


class AnalysisReport(Report):
    """One operation on one device: ``rooftop analyze OP``."""

    @property
    def findings(self) -> Any:
        """The findings, most important first."""
        return self.table("findings")

    def __getitem__(self, key: str) -> Any:
        """A field of the analysis (``report["floor_time_us"]``, ``report["bound"]``)."""
        return self._dict[key]


class ModelReport(Report):
    """The budget of one LLM step: ``rooftop model``."""

    @property
    def ops(self) -> Any:
        """One row per op of the step: work, floor, bound, share of the step."""
        return self.table("ops")

    @property
    def fusions(self) -> Any:
        """What each fusion would save."""
        return self.table("fusions")

    @property
    def totals(self) -> Dict[str, Any]:
        """The step's FLOPs, bytes and floors."""
        return dict(self._dict["totals"])

    @property
    def throughput(self) -> Dict[str, Any]:
        """Tokens per second at the floor, time to first token, weight and KV bytes."""
        return dict(self._dict["throughput"])


class BenchReport(Report):
    """A benchmark run on this machine's CPU: ``rooftop bench``."""

    @property
    def results(self) -> Any:
        """One row per case: time, rates, check, % of the roofs."""
        return self.table("results")


class DeviceReport(Report):
    """One catalog device with every figure and its source: ``rooftop devices NAME``."""

    @property
    def peaks(self) -> Any:
        """The peak FLOP/s per precision and unit, with sources."""
        return self.table("peaks")

    def __getitem__(self, key: str) -> Any:
        """A field of the device (``dev["peak_bw_gbs"]``)."""
        return self._dict[key]


# -- the functions -----------------------------------------------------------------


def trace(
    path: PathLike,
    device: Optional[str] = None,
    *,
    cp_window: Optional[str] = None,
    cp_instance: int = 0,
    what_if: Union[Mapping[str, float], Iterable[str], None] = None,
    threads: int = 0,
    device_files: Sequence[PathLike] = (),
) -> TraceReport:
    """Read and analyse one trace: ``rooftop trace PATH``.

    ``path`` is a PyTorch profiler (Kineto) trace, JSON plain or gzipped, or a JAX
    profile (``*.xplane.pb``), told apart by content. ``device`` is the catalog device
    for the roofline numbers (id, alias or the name a tool prints); by default the GPU
    the trace names, and no roofline columns when the catalog does not know it (with a
    :class:`RooftopWarning`). ``cp_window`` and ``cp_instance`` choose the critical
    path's window (an annotation such as ``"ProfilerStep#7"``); ``what_if`` scales ops'
    times before the critical path is recomputed (``{"aten::mm": 0.5}``: twice as fast).
    ``threads`` parse the file (0: one per core). ``device_files`` add devices
    (docs/device-format.md).

    The file is read and analysed with the GIL released.
    """
    if isinstance(what_if, Mapping):
        specs = [f"{k}={v}" for k, v in what_if.items()]
    else:
        specs = list(what_if or [])
    native = _rooftop.trace(
        os.fspath(path),
        device,
        cp_window=cp_window,
        cp_instance=cp_instance,
        what_if=specs,
        threads=threads,
        device_files=_paths(device_files),
    )
    _warn(native)
    return TraceReport(native, os.fspath(path))


def trace_ranks(
    path: PathLike,
    device: Optional[str] = None,
    *,
    gpus_per_node: Optional[int] = None,
    intra_link: Optional[str] = None,
    inter_link: Optional[str] = None,
    jobs: Optional[int] = None,
    cp_window: Optional[str] = None,
    cp_instance: int = 0,
    what_if: Union[Mapping[str, float], Iterable[str], None] = None,
    device_files: Sequence[PathLike] = (),
) -> RanksReport:
    """Read a directory of per-rank traces (or rank-table folders) and compare the
    ranks: ``rooftop trace DIR``.

    ``gpus_per_node``, ``intra_link`` and ``inter_link`` tell intra- from inter-node
    collectives and the links their bus bandwidth is compared with; ``jobs`` ranks are
    read at once (default: one per core). Ranks that cannot be read are a
    :class:`RooftopWarning` when others were read, an :class:`InputError` when none was.
    """
    if isinstance(what_if, Mapping):
        specs = [f"{k}={v}" for k, v in what_if.items()]
    else:
        specs = list(what_if or [])
    native = _rooftop.trace_ranks(
        os.fspath(path),
        device,
        gpus_per_node=gpus_per_node,
        intra_link=intra_link,
        inter_link=inter_link,
        jobs=jobs,
        cp_window=cp_window,
        cp_instance=cp_instance,
        what_if=specs,
        device_files=_paths(device_files),
    )
    _warn(native)
    return RanksReport(native, os.fspath(path))


def counters(
    path: PathLike,
    device: Optional[str] = None,
    *,
    input_format: Optional[str] = None,
    kernel: Optional[str] = None,
    device_files: Sequence[PathLike] = (),
) -> CountersReport:
    """Read a vendor profiler's counters and analyse them: ``rooftop counters PATH``.

    ``path`` is a rocprof / rocprofv3 / rocprof-compute / Nsight Compute / Nsight Systems
    output file or folder (detected; ``input_format`` forces one, by the names of
    ``rooftop counters --as``). ``kernel`` keeps the kernels whose name contains it.
    """
    native = _rooftop.counters(
        os.fspath(path),
        device,
        input_format=input_format,
        kernel=kernel,
        device_files=_paths(device_files),
    )
    _warn(native)
    return CountersReport(native)


def analyze(
    op: str,
    *,
    device: str,
    device_files: Sequence[PathLike] = (),
    **shape: Any,
) -> AnalysisReport:
    """Roofline, bound, efficiency and findings of one operation on one device:
    ``rooftop analyze OP``.

    ``op`` is gemm, attention, rmsnorm, layernorm, softmax, elementwise, reduction,
    copy or conv2d; the keyword arguments are the command's flags with ``_`` for ``-``
    and the same defaults: ``analyze("gemm", m=1, n=4096, k=4096, dtype="fp16",
    device="h100-sxm", time_us=42)`` is ``rooftop analyze gemm --m 1 --n 4096 --k 4096
    --dtype fp16 --device h100-sxm --time-us 42``. An unknown keyword is an
    :class:`InputError` naming the ones the op takes.
    """
    params = json.dumps(shape, default=_json_default)
    native = _rooftop.analyze(op, device, params, device_files=_paths(device_files))
    return AnalysisReport(native)


def model(
    config_or_preset: Union[PathLike, Mapping[str, Any]],
    *,
    device: str,
    weights: str = "bf16",
    kv_dtype: Optional[str] = None,
    phase: str = "decode",
    context: Optional[int] = None,
    batch: int = 1,
    tokens: Optional[int] = None,
    target_tokens_per_s: Optional[float] = None,
    device_files: Sequence[PathLike] = (),
) -> ModelReport:
    """The bandwidth and compute budget of one LLM step: ``rooftop model``.

    ``config_or_preset`` is a Hugging Face ``config.json`` path, the same as a dict
    (``AutoConfig.from_pretrained(...).to_dict()``), or a preset name (llama-7b,
    llama-3-8b, mistral-7b, mixtral-8x7b, qwen2-7b). The other arguments are the
    command's flags: ``weights`` (bf16, fp8, int8, q4_0, int4-g128, ...), ``phase``
    (decode or prefill), ``context`` (decode), ``tokens`` (prefill), ``batch``.
    """
    preset = config = config_json = None
    if isinstance(config_or_preset, Mapping):
        config_json = json.dumps(dict(config_or_preset), default=_json_default)
    elif isinstance(config_or_preset, str) and not os.path.exists(config_or_preset):
        preset = config_or_preset
    else:
        config = os.fspath(config_or_preset)
    native = _rooftop.model(
        device,
        preset=preset,
        config=config,
        config_json=config_json,
        weights=weights,
        kv_dtype=kv_dtype,
        phase=phase,
        context=context,
        batch=batch,
        tokens=tokens,
        target_tokens_per_s=target_tokens_per_s,
        device_files=_paths(device_files),
    )
    return ModelReport(native)


def devices(vendor: Optional[str] = None, *, device_files: Sequence[PathLike] = ()) -> Any:
    """The device catalog as a DataFrame, one row per device: ``rooftop devices``
    (``vendor``: nvidia, amd, apple, intel or cpu)."""
    native = _rooftop.devices(None, vendor=vendor, device_files=_paths(device_files))
    return _frame(json.loads(native.render("json")))


def device(name: str, *, device_files: Sequence[PathLike] = ()) -> DeviceReport:
    """One device with every figure and its source: ``rooftop devices NAME``."""
    return DeviceReport(_rooftop.devices(name, device_files=_paths(device_files)))


def bench(
    kernel: Union[str, Sequence[str], None] = None,
    *,
    device_files: Sequence[PathLike] = (),
    **flags: Any,
) -> BenchReport:
    """Check and time the kernel suite (or ``kernel``) on this machine's CPU and judge
    every result against the roofs: ``rooftop bench``.

    The keyword arguments are the command's flags with ``_`` for ``-`` and the same
    defaults: ``bench("triad", sizes=["16M"], min_time=0.05)`` is ``rooftop bench
    --kernel triad --sizes 16M --min-time 0.05``. Lists (``sizes``, ``single_config``,
    ``sweep``) are Python lists. Ctrl-C (``KeyboardInterrupt``) stops the run between
    samples.
    """
    if kernel is not None:
        flags["kernel"] = [kernel] if isinstance(kernel, str) else list(kernel)
    for key in ("sizes", "single_config", "compare"):
        value = flags.get(key)
        if value is not None and not isinstance(value, str):
            flags[key] = [str(v) for v in value]
        elif isinstance(value, str):
            flags[key] = value.split(",")
    if isinstance(flags.get("spec"), os.PathLike):
        flags["spec"] = os.fspath(flags["spec"])
    params = json.dumps(flags, default=_json_default)
    return BenchReport(_rooftop.bench(params, device_files=_paths(device_files)))
