"""The run widget, one wing of the notebook floor: what a run looks like in a frontend that renders widgets.

- ``_protocol``: the operations, traits and states Python sends to the browser (and the control comm's names),
  defined once here; ``js/run-view/src/protocol.ts`` and the labextension are checked against it
  (``tests/test_protocol.py``);
- ``_view``: the anywidget (``RunView``, ``TranscriptWidget``) whose browser side is ``js/run-view``, bundled into
  ``static/``;
- ``_presenter``: session events -> widget operations (``RunPresenter``);
- ``_live``: the ``python`` tool's live output in its tool panel (``LiveOutput``);
- ``_display``: how a run is displayed: the widget, with a static copy for readers without widgets.
"""

from ._display import RunDisplay
from ._presenter import RunPresenter
from ._view import RunView, TranscriptWidget

__all__ = ["RunDisplay", "RunPresenter", "RunView", "TranscriptWidget"]
