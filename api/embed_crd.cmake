# cmake -DINPUT=crd.yaml -DTEMPLATE=crd_text.h.in -DOUTPUT=crd_text.h -P embed_crd.cmake
file(READ ${INPUT} CRD_TEXT)
configure_file(${TEMPLATE} ${OUTPUT} @ONLY)
