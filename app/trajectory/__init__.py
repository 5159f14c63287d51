"""The trajectory of a session, with no interface: its rows and filters (`entries`), the model of a
live view (`model`) and the lazy one of a file (`indexed`), what each row says (`labels`), the
search, and where the session comes from (`source`). The screen, tree, list and detail pane that
show it are in `app.ui.trajectory`; nothing here imports Textual or Rich."""
