"""What puts the numbers of :mod:`qkv` on a page of the book: values pasted into
the prose (:mod:`~qkv.page.glue`), sentences that read a measurement
(:mod:`~qkv.page.verdicts`), tensors as LaTeX (:mod:`~qkv.page.display`),
the figure style and heatmaps (:mod:`~qkv.page.plot`), architecture diagrams
(:mod:`~qkv.page.diagrams`), and the interactive figures: the widget layer
(:mod:`~qkv.page.widgets`), the head view (:mod:`~qkv.page.headview`) and the
explorables (:mod:`~qkv.page.explorables`).

Nothing in the core of :mod:`qkv` imports this subpackage.
"""
