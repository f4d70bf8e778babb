"""Typing text into agents' terminals: tmux panes, Zellij panes, Emacs buffers.

``target.py`` is the interface every kind of terminal implements; ``text.py`` makes
text safe to type and spots dialogs a message must not answer; ``delivery.py`` is
the per-target queue (order, rate limit, hold while a dialog shows, confirmation).
"""
