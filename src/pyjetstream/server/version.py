"""The server's version, in its own module so that the monitor, the server and the CLI can all read it
without importing one another."""

__all__ = ["SERVER_VERSION"]

#: The nats-server version we report in INFO and /varz: clients gate features on it. The engine
#: implements the 2.10 stream and consumer features (compression, first_seq, subject transforms,
#: metadata, filter_subjects, create ``action``, ``+TERM <reason>``), so clients may turn them on.
SERVER_VERSION = "2.10.22"
