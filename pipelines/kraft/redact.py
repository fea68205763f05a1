"""Secrets the metadata log holds, kept out of the warehouse.

A KRaft log stores SCRAM credentials (``UserScramCredentialRecord``: salt, stored and server
keys) and dynamic configs whose values may be passwords (``ConfigRecord``: Kafka encrypts none
of them in KRaft mode). kaudit writes those fields as :data:`REDACTED` in
``raw/metadata_records`` and ``raw/kraft_configs``: the audit needs that they changed, not what
they are. A config is taken as secret by its name (Kafka's PASSWORD-type configs are named so:
``*.password``, ``*.jaas.config``, ``ssl.keystore.key``, ``*.secret``, ...), since the broker's
ConfigDef is not in the log.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

REDACTED = "[redacted]"
SCRAM = "UserScramCredentialRecord"
SCRAM_FIELDS = ("salt", "storedKey", "serverKey")
CONFIG = "ConfigRecord"
_SECRET_NAME = r"password|secret|jaas\.config|credential|keystore\.key|\.key$"
_SECRET_CONFIG = re.compile(_SECRET_NAME, re.IGNORECASE)
# a ConfigRecord's JSON naming such a config (a cheap filter before the JSON is parsed)
_SECRET_CONFIG_TEXT = r'"name":"[^"]*(?i:' + _SECRET_NAME.replace("$", '"') + ")"


def secret_config(name: str | None) -> bool:
    return bool(name) and bool(_SECRET_CONFIG.search(name))


def redact_records(table: pa.Table) -> pa.Table:
    """``table`` (``raw/metadata_records`` rows) with the secrets of its records' JSON replaced."""
    kind, text = table["record_type"], table["record"]
    scram = pc.equal(kind, SCRAM)
    config = pc.and_(pc.equal(kind, CONFIG), pc.match_substring_regex(text, _SECRET_CONFIG_TEXT))
    rows = np.flatnonzero(pc.fill_null(pc.or_(scram, config), False).to_numpy(zero_copy_only=False))
    if not len(rows):
        return table
    records = text.to_pylist()
    for i in rows.tolist():
        fields = json.loads(records[i])
        if fields.get("name") is not None and kind[i].as_py() == CONFIG:
            if secret_config(fields["name"]) and fields.get("value") is not None:
                fields["value"] = REDACTED
        for key in SCRAM_FIELDS if kind[i].as_py() == SCRAM else ():
            if fields.get(key) is not None:
                fields[key] = REDACTED
        records[i] = json.dumps(fields, separators=(",", ":"))
    index = table.schema.get_field_index("record")
    return table.set_column(index, table.schema.field(index), pa.array(records, table.schema.field(index).type))
