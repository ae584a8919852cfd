"""`swerl report`: an RL run (or graded files) -> one self-contained HTML page.

build.py reads the inputs and aggregates them (aggregate.py: the numbers; viewer.py: trajectory bodies);
charts.py draws inline SVG; page.py assembles the document with the inline assets/report.{css,js}.
"""
