import os
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The offline corpora: $TRANSFORMER_DATA, else ../shared/data beside the repo.

    Missing corpora skip the tests that need them, except under CI (``CI`` set, as CI
    services and .ci/run do): there they fail, so a green run has run every test.
    """
    root = Path(os.environ.get("TRANSFORMER_DATA", REPO.parent / "shared" / "data"))
    if not (root / "multi30k-en-de").is_dir():
        message = f"offline corpora not found at {root} (set TRANSFORMER_DATA)"
        if os.environ.get("CI"):
            pytest.fail(f"{message}; CI is set, so this fails instead of skipping")
        pytest.skip(message)
    return root


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no CUDA device here"))])
def device(request) -> torch.device:
    """Where a device-aware test runs: the CPU always, and a CUDA GPU when there is one."""
    return torch.device(request.param)
