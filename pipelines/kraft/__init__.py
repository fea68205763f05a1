"""KRaft metadata (``__cluster_metadata``): record schemas as data, one decoder, the replay."""
