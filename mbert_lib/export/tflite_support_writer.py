"""Writes the TFLite metadata of a BERT text classifier with tflite-support's own writer.

Not imported by mbert_lib: `mbert_lib.export.tflite_metadata` runs this file in a
Python that has tflite-support, which cannot live beside TensorFlow 2.21 (it
pins protobuf < 4). It imports nothing but tflite-support:

    PY -I tflite_support_writer.py --model IN.tflite --vocab vocab.txt \\
        --labels labels.txt --name NAME --description TEXT --out OUT.tflite

The metadata names the three int32 inputs (ids, mask, segment ids: the
`serving_default_*` tensors of an mbert_lib export), packs vocab.txt as the
BertTokenizer's vocabulary and labels.txt as the labels of the one output,
the class probabilities. That is what the Task Library's BertNLClassifier
reads. tflite-support is imported in `main`, so that
this module also imports (for its docstring) where tflite-support is absent.
"""

import argparse


def main() -> None:
    # on use: tflite-support lives in its own venv (it pins protobuf < 4), which runs this file
    from tflite_support.metadata_writers import bert_nl_classifier, metadata_info, writer_utils

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for flag in ("--model", "--vocab", "--labels", "--name", "--description", "--out"):
        parser.add_argument(flag, required=True)
    args = parser.parse_args()
    model = writer_utils.load_file(args.model)
    writer = bert_nl_classifier.MetadataWriter.create_from_metadata_info(
        model,
        general_md=metadata_info.GeneralMd(name=args.name, description=args.description),
        input_md=metadata_info.BertInputTensorsMd(
            model,
            "serving_default_input_word_ids:0",
            "serving_default_input_mask:0",
            "serving_default_input_type_ids:0",
            tokenizer_md=metadata_info.BertTokenizerMd(args.vocab),
        ),
        # "probability": the output name BertNLClassifier looks up (another one crashes it)
        output_md=metadata_info.ClassificationTensorMd(
            name="probability",
            description="the probability of each label",
            label_files=[metadata_info.LabelFileMd(file_path=args.labels)],
            tensor_type=writer_utils.get_output_tensor_types(model)[0],
        ),
    )
    writer_utils.save_file(writer.populate(), args.out)


if __name__ == "__main__":
    main()
