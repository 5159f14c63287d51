"""The line index cache (`<session>.jsonl.idx`) taken apart and put together again, for tests that
damage it.

`IndexCache.read(path)` splits a cache into its parts; `write(path)` puts them back. With
`reseal=True` the parts are sealed again with this account's key, as toolscope itself would: a
damage that a reader must catch without the seal's help (the defence behind it); with
`reseal=False` the old seals stay, as they would on a damaged disk or under anyone else's edit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from app.session.line_index import COUNT_BLOCK, INDEX_MAGIC, index_path
from app.session.seal import SEAL_BYTES, seal


@dataclass
class IndexCache:
    tag: bytes
    meta: dict  # type: ignore[type-arg]
    offsets: bytes
    types: bytes
    offset_seals: bytes
    sections: dict[str, bytes]

    @classmethod
    def read(cls, session: Path) -> IndexCache:
        data = index_path(session).read_bytes()
        assert data.startswith(INDEX_MAGIC)
        tag_line, meta_line, body = data[len(INDEX_MAGIC) :].split(b"\n", 2)
        meta = json.loads(meta_line)
        count = meta["count"]
        blocks = -(-count // COUNT_BLOCK)
        offsets, types = body[: count * 8], body[count * 8 : count * 9]
        seals = body[count * 9 : count * 9 + blocks * SEAL_BYTES]
        position = count * 9 + blocks * SEAL_BYTES
        sections = {}
        for key, (length, _tag) in meta["sections"].items():
            sections[key] = body[position : position + length]
            position += length
        assert position == len(body)
        return cls(bytes.fromhex(tag_line.decode()), meta, offsets, types, seals, sections)

    def write(self, session: Path, *, reseal: bool = True) -> None:
        meta = dict(self.meta)
        if reseal:
            meta["sections"] = {
                key: [len(raw), seal(key.encode(), b"\0", raw).hex()]  # type: ignore[union-attr]
                for key, raw in self.sections.items()
            }
            blocks = -(-(len(self.offsets) // 8) // COUNT_BLOCK)
            self.offset_seals = b"".join(
                seal(block.to_bytes(8, "little"), self.offsets[block * COUNT_BLOCK * 8 : (block + 1) * COUNT_BLOCK * 8])  # type: ignore[misc]
                for block in range(blocks)
            )
        meta_line = json.dumps(meta, separators=(",", ":")).encode() + b"\n"
        tag = seal(meta_line, self.types, self.offset_seals) if reseal else self.tag
        assert tag is not None
        index_path(session).write_bytes(
            INDEX_MAGIC
            + tag.hex().encode()
            + b"\n"
            + meta_line
            + self.offsets
            + self.types
            + self.offset_seals
            + b"".join(self.sections.values())
        )
