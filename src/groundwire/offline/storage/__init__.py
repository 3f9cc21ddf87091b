"""Object storage for `rescore`: `s3://`, `gs://`, `az://`, `https://` inputs and outputs.

```python
from groundwire.offline.storage import list_objects, object_url, open_object

url = object_url("s3://traces/otel/")       # None for a local path
is_prefix, objects = list_objects(url)      # [(url, size), ...], sorted by key
```

Everything goes through fsspec (`pip install 'groundwire[s3]'`: fsspec and s3fs; gcsfs or adlfs
for Google Cloud Storage and Azure), the library Ray and pyarrow read object storage with.
Credentials come only from the standard places (environment, profiles) and are never logged.
"""

from __future__ import annotations

from groundwire.offline.storage._objects import (
    BLOCK_SIZE,
    download,
    list_objects,
    move_object,
    object_size,
    open_object,
    remove_objects,
    upload,
)
from groundwire.offline.storage._urls import (
    SCHEMES,
    ObjectPath,
    StorageError,
    filesystem,
    object_url,
    storage_error,
)

__all__ = [
    "BLOCK_SIZE",
    "SCHEMES",
    "ObjectPath",
    "StorageError",
    "download",
    "filesystem",
    "list_objects",
    "move_object",
    "object_size",
    "object_url",
    "open_object",
    "remove_objects",
    "storage_error",
    "upload",
]
