"""A trained model directory out to the formats its users run, and checks that it still works.

    tflite.py, quantization.py, representative.py   TFLite in four precisions
    interpreter.py, inference.py, evaluate.py       running and scoring the .tflite files
    tflite_metadata.py, tflite_support_writer.py    the Task Library's metadata
    hf.py, hf_classifier.py                         a Hugging Face directory (transformers)
    savedmodel.py, preprocessing.py                 TF-Hub-style encoder + preprocessing
    savedmodel_classifier.py, classifier_labels.py  one serving SavedModel: strings -> labels

Every exporter reads a model directory or checkpoint through mbert_lib.checkpoints;
the Hugging Face layout and the name map are mbert_lib.convert's (below this package).
`python -m mbert_lib export tflite|hf|savedmodel` calls them.
"""
