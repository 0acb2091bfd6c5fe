"""The built-in `wait` tool and the events a turn waits for: the book of waits in progress and
events delivered (`book.py`), and a `wait` call carried out on a durable timer (`tool.py`).
"""
