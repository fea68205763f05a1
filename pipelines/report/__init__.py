"""``kaudit report``: the run's audit as one self-contained HTML page and ``summary.json``.
``facts`` reads the run's tables (pyarrow, no Spark) into plain numbers and rows, ``charts``
draws inline SVG, ``page`` lays out the HTML, ``write`` publishes both files."""
