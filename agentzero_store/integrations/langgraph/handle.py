"""What the LangGraph store and checkpointer share: an ``ItemStore`` of their own
collection in a data dir, and its lifecycle."""

from __future__ import annotations

from pathlib import Path
from typing import Self

from ... import ItemStore, StoreConfig


class ItemsHandle:
    """Opens one collection of a data dir's ``ItemStore`` and closes it."""

    _items: ItemStore

    def _open_items(
        self,
        data_dir: Path | str,
        collection: str,
        passphrase: str | None,
        key: bytes | str | None,
        key_file: Path | str | None,
        config: StoreConfig | None,
    ) -> None:
        self._items = ItemStore.open(
            data_dir,
            collection=collection,
            passphrase=passphrase,
            key=key,
            key_file=key_file,
            config=config,
        )

    @property
    def items(self) -> ItemStore:
        """The item store underneath (closed by ``close``)."""
        return self._items

    def close(self) -> None:
        """Close the data dir. Idempotent; later calls raise ``StoreClosedError``."""
        self._items.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["ItemsHandle"]
