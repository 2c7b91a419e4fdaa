"""The run viewer's building blocks (``swarmcore ui``): pure functions that turn a run into markup.

:mod:`swarmcore._ui.graph` draws a flow's shape as a self-contained SVG.
:mod:`swarmcore._ui.timeline` draws a run's agents and calls as a Gantt chart.
Nothing here does I/O or needs a web framework.
"""
