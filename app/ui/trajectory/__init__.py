"""The trajectory's interface: its app (`toolscope view`), screen, tree, flat list, detail pane and
the Rich form of its labels (what they say is headless, in `app.trajectory`)."""
