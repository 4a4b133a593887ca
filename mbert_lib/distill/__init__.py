"""Knowledge transfer from the IB-BERT teacher to MobileBERT (paper section 4)."""
