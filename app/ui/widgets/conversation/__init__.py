"""The conversation's widgets: the pane (`pane.Conversation`, a window of blocks) and a module per
kind of block. A block's module is imported with the first item of its kind, not before the chat's
first frame (the import-hygiene test names them), so nothing is imported here."""
