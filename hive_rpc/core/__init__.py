"""The pure core: prompt records, their lifecycle table, answer validation, errors.

Nothing in this package does I/O or imports trio, so every rule here can be tested
with plain values and reused by any face or store.
"""
