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
    """The offline corpora: $TRANSFORMER_DATA, else ../shared/data beside the repo."""
    root = Path(os.environ.get("TRANSFORMER_DATA", REPO.parent / "shared" / "data"))
    if not (root / "multi30k-en-de").is_dir():
        pytest.skip(f"offline corpora not found at {root} (set TRANSFORMER_DATA)")
    return root
