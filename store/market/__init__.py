"""The market, per marketplace site: its profile and sealed sessions, and the price book
(sales and buying costs).

Private to `store`: everything public is named in `store/__init__.py`.
"""
