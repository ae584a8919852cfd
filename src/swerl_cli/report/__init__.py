"""`swerl report`: an RL run (or graded files) -> one self-contained HTML page.

build.py reads the inputs and aggregates them (aggregate.py: the numbers; curve.py: the learning curve per run
directory, with the probes; viewer.py: trajectory bodies); charts.py draws inline SVG (curve_page.py: the learning
curve's section); page.py assembles the document with the inline assets/report.{css,js}.
"""
