"""Type stubs of the native module `rooftop._rooftop` (crates/rooftop-py/src)."""

from typing import List, Optional

__version__: str

class RooftopError(Exception):
    """An error of rooftop: the sentence `rooftop` prints after `rooftop: error:`."""

class InputError(RooftopError):
    """Bad input: the errors for which the `rooftop` command exits with 2."""

class Report:
    """One analysis result, kept in Rust; renders as the CLI's formats."""

    @property
    def notes(self) -> List[str]: ...
    @property
    def kind(self) -> str: ...
    def render(
        self,
        format: str,
        top: Optional[int] = None,
        section: Optional[str] = None,
        dispatches: bool = False,
    ) -> str: ...

def trace(
    path: str,
    device: Optional[str] = None,
    *,
    cp_window: Optional[str] = None,
    cp_instance: int = 0,
    what_if: List[str] = ...,
    threads: int = 0,
    device_files: List[str] = ...,
) -> Report: ...
def trace_ranks(
    path: str,
    device: Optional[str] = None,
    *,
    gpus_per_node: Optional[int] = None,
    intra_link: Optional[str] = None,
    inter_link: Optional[str] = None,
    jobs: Optional[int] = None,
    cp_window: Optional[str] = None,
    cp_instance: int = 0,
    what_if: List[str] = ...,
    device_files: List[str] = ...,
) -> Report: ...
def counters(
    path: str,
    device: Optional[str] = None,
    *,
    input_format: Optional[str] = None,
    kernel: Optional[str] = None,
    device_files: List[str] = ...,
) -> Report: ...
def analyze(op: str, device: str, params_json: str, device_files: List[str] = ...) -> Report: ...
def model(
    device: str,
    *,
    preset: Optional[str] = None,
    config: Optional[str] = None,
    config_json: Optional[str] = None,
    weights: str = "bf16",
    kv_dtype: Optional[str] = None,
    phase: str = "decode",
    context: Optional[int] = None,
    batch: int = 1,
    tokens: Optional[int] = None,
    target_tokens_per_s: Optional[float] = None,
    device_files: List[str] = ...,
) -> Report: ...
def devices(
    name: Optional[str] = None,
    *,
    vendor: Optional[str] = None,
    device_files: List[str] = ...,
) -> Report: ...
def bench(params_json: str, device_files: List[str] = ...) -> Report: ...
