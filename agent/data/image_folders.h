#pragma once
// A folder of class folders, each holding that class's images: the layout
// people sort camera frames into (and torchvision's ImageFolder reads).

#include <string>
#include <vector>

#include "agent/data/dataset.h"
#include "core/status.h"

namespace edgetrain::agent {

// The images under `root`. Its class folders are its subfolders whose names do
// not start with '.', numbered in byte order of their names; there must be
// info.classes of them, and when `same_classes_as` is not empty (a test set
// read after its train set) the same names. Files beside them are ignored:
// they belong to no class. Inside a class folder every entry whose name does
// not start with '.' must be an image (PNG or JPEG; decoded by content, not by
// name) of exactly info.height x info.width pixels, converted to info.channels
// (1 grey, 2 grey and alpha, 3 RGB, 4 RGBA); there is no resizing. Samples are
// kept as bytes, channels first, scaled 1/255. Errors are InvalidArgument
// naming the folder or file. The class folders' names are the data set's
// class_names, class 0's first.
StatusOr<Dataset> ReadImageFolders(const std::string& root, const DatasetInfo& info,
                                        const std::vector<std::string>& same_classes_as = {});

}  // namespace edgetrain::agent
