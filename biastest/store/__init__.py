"""The dataset store: local append-only Parquet shards, retrieval, importers and Hub sync.

Build one :class:`DatasetStore` per process and pass it to the apps::

    from biastest.store import DatasetStore, retrieve_sentences, retrieve_pairs

    store = DatasetStore()                       # $BIASTEST_DATA_DIR or ~/.cache/biastest/store
    found = retrieve_sentences(store, spec)      # indexed, with Coverage per term
    pairs = retrieve_pairs(store, spec, sentences=found)
    store.add(run.sentences, run.pairs)          # new shard; nothing is rewritten

Hub sync (:mod:`biastest.store.hub`) and importers
(:mod:`biastest.store.importers`) build on the same store.
"""

from biastest.store.hub import HubSync, PullReport, PushReport, SyncStatus, dataset_card
from biastest.store.importers import (
    ImportResult,
    PublicPull,
    import_file,
    pull_public_biastestgpt,
    read_biastestgpt_csv,
    read_biastestgpt_pairs,
    read_biastestgpt_sentences,
    read_crows_pairs,
    read_stereoset_intrasentence,
)
from biastest.store.local import (
    TABLES,
    AddReport,
    DatasetStore,
    default_store_dir,
)
from biastest.store.retrieval import (
    Coverage,
    ImageRetrieval,
    PairRetrieval,
    SentenceMatch,
    SentenceRetrieval,
    retrieve_images,
    retrieve_pairs,
    retrieve_sentences,
)
from biastest.store.view import TableView

__all__ = [
    "TABLES",
    "AddReport",
    "DatasetStore",
    "TableView",
    "default_store_dir",
    "Coverage",
    "ImageRetrieval",
    "PairRetrieval",
    "SentenceMatch",
    "SentenceRetrieval",
    "retrieve_images",
    "retrieve_pairs",
    "retrieve_sentences",
    "HubSync",
    "PullReport",
    "PushReport",
    "SyncStatus",
    "dataset_card",
    "ImportResult",
    "PublicPull",
    "import_file",
    "pull_public_biastestgpt",
    "read_biastestgpt_csv",
    "read_biastestgpt_pairs",
    "read_biastestgpt_sentences",
    "read_crows_pairs",
    "read_stereoset_intrasentence",
]
